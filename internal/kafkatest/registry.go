package kafkatest

import (
	"net/http"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// RegistryDown makes fake answer every request 503 ("down for maintenance") while the flag
// it returns is set, as it is at first; cleared, fake answers as before.
func RegistryDown(fake *srfake.Registry) *atomic.Bool {
	down := new(atomic.Bool)
	down.Store(true)
	fake.Intercept(func(w http.ResponseWriter, _ *http.Request) bool {
		if !down.Load() {
			return false
		}
		http.Error(w, `{"error_code": 50001, "message": "down for maintenance"}`, http.StatusServiceUnavailable)
		return true
	})
	return down
}
