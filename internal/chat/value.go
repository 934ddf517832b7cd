package chat

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// jsonValue decodes JSON into a template value keeping object keys in the
// order the client sent them, as Python's json (and so Hugging Face) does:
// templates print tool arguments with tojson and iterate dicts, and a
// sorted or random order would change the prompt. Integers stay integers.
func jsonValue(raw json.RawMessage) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if dec.More() {
		return jinja.Undefined(), fmt.Errorf("chat: trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token() // ]
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token() // }
			return d, err
		}
		return jinja.Undefined(), fmt.Errorf("chat: unexpected %v in JSON", t)
	default:
		return jinja.FromGoValue(tok), nil
	}
}
