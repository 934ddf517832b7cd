package toolcall

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const templatesDir = "../../../shared/testdata/templates"

// The families the real templates are recognised as: each known tool
// template maps to the syntax its model writes.
func TestDetectRealTemplates(t *testing.T) {
	for file, want := range map[string]Family{
		"Qwen-Qwen2.5-7B-Instruct.jinja":                    Hermes,
		"Qwen-Qwen3-0.6B.jinja":                             Hermes,
		"Qwen3-Coder.jinja":                                 Hermes,
		"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja": Hermes,
		"meta-llama-Llama-3.1-8B-Instruct.jinja":            Llama3,
		"meta-llama-Llama-3.3-70B-Instruct.jinja":           Llama3,
		"mistralai-Mistral-Nemo-Instruct-2407.jinja":        Mistral,
		"unsloth-mistral-Devstral-Small-2507.jinja":         MistralArgs,
		"Mistral-Small-3.2-24B-Instruct-2506.jinja":         MistralArgs,
		"openai-gpt-oss-120b.jinja":                         Harmony,
		"google-gemma-2-2b-it.jinja":                        None,
	} {
		b, err := os.ReadFile(filepath.Join(templatesDir, file))
		if os.IsNotExist(err) {
			t.Skipf("%s is absent: the reference templates are needed", templatesDir)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := Detect(string(b)); got != want {
			t.Errorf("Detect(%s) = %q, want %q", file, got, want)
		}
	}
}

// Each template's own rendering of a past tool call (expected.json, by
// jinja2 or llama.cpp) is what its model is taught to write; parsed with the
// family Detect picks, it must give back the call the conversation holds.
func TestParseTemplatesOwnRenderings(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(templatesDir, "expected.json"))
	if os.IsNotExist(err) {
		t.Skipf("%s/expected.json is absent: the reference renderings are needed", templatesDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Template, Conversation string
			RenderedJinja2         *string `json:"rendered_jinja2"`
			RenderedLlamacpp       *string `json:"rendered_llamacpp"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	checked := map[Family]int{}
	for _, c := range ref.Cases {
		if c.Conversation != "tool_call" && c.Conversation != "tool_call_object_args" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(templatesDir, c.Template))
		if err != nil {
			t.Fatal(err)
		}
		f := Detect(string(src))
		if f == None {
			continue
		}
		text := c.RenderedJinja2
		if text == nil {
			text = c.RenderedLlamacpp
		}
		if text == nil {
			continue
		}
		_, out, ok := strings.Cut(*text, "What is the weather in Paris?")
		if !ok {
			t.Fatalf("%s %s: the user's question is not in the rendering", c.Template, c.Conversation)
		}
		// The model writes what follows its generation prompt.
		switch f {
		case Harmony:
			_, out, _ = strings.Cut(out, "<|start|>assistant")
		case Llama3, Functionary:
			_, out, _ = strings.Cut(out, "assistant<|end_header_id|>\n\n")
		}
		r := Parse(f, out)
		if len(r.Calls) == 0 {
			t.Errorf("%s %s (%s): no call in %q", c.Template, c.Conversation, f, out)
			continue
		}
		var args struct{ City, Unit string }
		if r.Calls[0].Name != "get_weather" || json.Unmarshal([]byte(r.Calls[0].Arguments), &args) != nil ||
			args.City != "Paris" || args.Unit != "celsius" {
			t.Errorf("%s %s (%s): first call %+v, want get_weather Paris celsius", c.Template, c.Conversation, f, r.Calls[0])
			continue
		}
		checked[f]++
	}
	for _, f := range []Family{Hermes, Llama3, Mistral, MistralArgs, Harmony, Functionary, Apriel} {
		if checked[f] == 0 {
			t.Errorf("no rendering of family %s was checked", f)
		}
	}
	t.Logf("renderings parsed back per family: %v", checked)
}
