package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// crdDir is ../shared/k8s/crds from the repository root (deploy/ is one
// level below it).
const crdDir = "../../shared/k8s/crds"

type schema struct {
	Type                 string             `json:"type"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	Items                *schema            `json:"items"`
	AdditionalProperties *schema            `json:"additionalProperties"`
	Enum                 []any              `json:"enum"`
	MinLength            *int               `json:"minLength"`
	MaxLength            *int               `json:"maxLength"`
	Pattern              string             `json:"pattern"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
	MinItems             *int               `json:"minItems"`
	MaxItems             *int               `json:"maxItems"`
	PreserveUnknown      bool               `json:"x-kubernetes-preserve-unknown-fields"`
}

type crd struct {
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
			Schema struct {
				OpenAPIV3Schema *schema `json:"openAPIV3Schema"`
			} `json:"schema"`
		} `json:"versions"`
	} `json:"spec"`
}

// crdSchema finds the schema for apiVersion/kind among the shared CRDs.
func crdSchema(t *testing.T, apiVersion, kind string) *schema {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if len(files) == 0 {
		t.Skipf("CRDs not found in %s (the shared folder is absent): InferencePool/InferenceObjective not validated", crdDir)
	}
	for _, f := range files {
		if strings.Contains(f, "gie-v1.5.0") {
			continue // the older copy of the same CRD
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c crd
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range c.Spec.Versions {
			if c.Spec.Names.Kind == kind && c.Spec.Group+"/"+v.Name == apiVersion && v.Served {
				return v.Schema.OpenAPIV3Schema
			}
		}
	}
	t.Fatalf("no served CRD for %s %s in %s", apiVersion, kind, crdDir)
	return nil
}

func validateCRD(t *testing.T, raw []byte) error {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return err
	}
	api, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	s := crdSchema(t, api, kind)
	return s.validate("", obj)
}

// validate checks v against the structural schema: types, required fields,
// unknown fields (refused, as a strict apiserver does), enums, lengths,
// patterns and bounds. CEL rules are not evaluated.
func (s *schema) validate(path string, v any) error {
	if s == nil {
		return nil
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T", path, v)
		}
		if path == ".metadata" {
			return nil
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				return fmt.Errorf("%s: required field %q missing", path, r)
			}
		}
		for k, x := range m {
			sub, ok := s.Properties[k]
			switch {
			case ok:
			case s.AdditionalProperties != nil:
				sub = s.AdditionalProperties
			case s.PreserveUnknown:
				continue
			default:
				return fmt.Errorf("%s: unknown field %q", path, k)
			}
			if err := sub.validate(path+"."+k, x); err != nil {
				return err
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %T", path, v)
		}
		if s.MinItems != nil && len(a) < *s.MinItems || s.MaxItems != nil && len(a) > *s.MaxItems {
			return fmt.Errorf("%s: %d items outside [%v, %v]", path, len(a), s.MinItems, s.MaxItems)
		}
		for i, x := range a {
			if err := s.Items.validate(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
				return err
			}
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want a string, got %T", path, v)
		}
		if s.MinLength != nil && len(str) < *s.MinLength || s.MaxLength != nil && len(str) > *s.MaxLength {
			return fmt.Errorf("%s: length %d out of bounds", path, len(str))
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", path, str, s.Pattern)
		}
	case "integer", "number":
		f, ok := v.(float64)
		if !ok || s.Type == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("%s: want an %s, got %v", path, s.Type, v)
		}
		if s.Minimum != nil && f < *s.Minimum || s.Maximum != nil && f > *s.Maximum {
			return fmt.Errorf("%s: %v out of bounds", path, f)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want a boolean, got %T", path, v)
		}
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if e == v {
				return nil
			}
		}
		return fmt.Errorf("%s: %v not in %v", path, v, s.Enum)
	}
	return nil
}

// The validator itself refuses what the apiserver would.
func TestCRDValidatorRefusesBadPools(t *testing.T) {
	s := crdSchema(t, "inference.networking.k8s.io/v1", "InferencePool")
	good := `{"apiVersion":"inference.networking.k8s.io/v1","kind":"InferencePool","metadata":{"name":"p"},
	  "spec":{"selector":{"matchLabels":{"a":"b"}},"targetPorts":[{"number":8000}],"endpointPickerRef":{"name":"epp","port":{"number":9002}}}}`
	for name, c := range map[string]struct {
		body string
		ok   bool
	}{
		"good":           {good, true},
		"unknown field":  {strings.Replace(good, `"targetPorts"`, `"bogus":1,"targetPorts"`, 1), false},
		"no targetPorts": {strings.Replace(good, `"targetPorts":[{"number":8000}],`, ``, 1), false},
		"nine ports":     {strings.Replace(good, `[{"number":8000}]`, `[{"number":1},{"number":2},{"number":3},{"number":4},{"number":5},{"number":6},{"number":7},{"number":8},{"number":9}]`, 1), false},
		"bad failure":    {strings.Replace(good, `"name":"epp"`, `"name":"epp","failureMode":"Sometimes"`, 1), false},
	} {
		var obj map[string]any
		if err := json.Unmarshal([]byte(c.body), &obj); err != nil {
			t.Fatal(name, err)
		}
		if err := s.validate("", obj); (err == nil) != c.ok {
			t.Errorf("%s: validate = %v, want ok=%v", name, err, c.ok)
		}
	}
}
