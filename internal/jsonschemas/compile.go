package jsonschemas

import (
	"bytes"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxObjects is the most JSON objects (schemas, and the objects holding them such as
// properties) a schema document may have: the library's compiling takes time quadratic in
// them (20,000 properties: 2 to 3 s; 5,000: 0.2 s).
const MaxObjects = 5000

// Compile compiles raw, a JSON Schema document, as the resource url: a document of more
// than MaxObjects objects is an error before it is compiled, and so are a $ref outside the
// document (a file, a URL) and a schema Check refuses.
func Compile(raw []byte, url string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if n := objects(doc, 0); n > MaxObjects {
		return nil, fmt.Errorf("the schema has more than %d objects (schemas and the objects holding them): it would take too long to compile", MaxObjects)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme: nothing outside the schema is loaded
	pats := &patterns{}
	c.UseRegexpEngine(pats.compile)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	pats.compiled = true
	if err != nil {
		return nil, err
	}
	if err := Check(s); err != nil {
		return nil, err
	}
	return s, nil
}

// objects counts the objects in v, stopping past MaxObjects; n is the count so far.
func objects(v any, n int) int {
	switch v := v.(type) {
	case map[string]any:
		n++
		for _, x := range v {
			if n > MaxObjects {
				return n
			}
			n = objects(x, n)
		}
	case []any:
		for _, x := range v {
			if n > MaxObjects {
				return n
			}
			n = objects(x, n)
		}
	}
	return n
}
