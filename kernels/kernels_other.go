//go:build !amd64 || purego

package kernels

// Without amd64 assembly only the portable kernels exist.

func detectLevels() []Level { return []Level{Generic} }

func dispatchSet(Level) kernelSet { return genericKernels }

// rawSet returns the kernels written for level l, or false if l has none.
func rawSet(l Level) (kernelSet, bool) { return genericKernels, l == Generic }

// setAVX512Limits is a test hook; without assembly there is nothing to set.
func setAVX512Limits(qwords, bytes int) (restore func()) { return func() {} }
