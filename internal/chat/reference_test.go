package chat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// refDir holds the shared chat-template reference (68 templates × 9
// conversations rendered by jinja2 as Hugging Face sets it up, and by
// llama.cpp); see its README.
const refDir = "../../../shared/testdata/templates"

type refCase struct {
	Template            string  `json:"template"`
	Conversation        string  `json:"conversation"`
	AddGenerationPrompt bool    `json:"add_generation_prompt"`
	BOS                 string  `json:"bos_token"`
	EOS                 string  `json:"eos_token"`
	Llamacpp            *string `json:"rendered_llamacpp"`
	Jinja2              *string `json:"rendered_jinja2"`
	Disagreement        *string `json:"disagreement"`
}

type refConversation struct {
	ID       string            `json:"id"`
	Messages []json.RawMessage `json:"messages"`
}

// TestRenderingAgreesWithTheReference renders every case from the
// conversation's messages exactly as sent and compares with jinja2 where
// jinja2 rendered, with llama.cpp where only llama.cpp did, and expects a
// refusal where both refused. The agreement count and every failure are
// logged; the test fails below the floor this code has been measured at.
func TestRenderingAgreesWithTheReference(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(refDir, "expected.json"))
	if err != nil {
		t.Skipf("chat-template reference not available (%v); it lives in ../shared/testdata/templates", err)
	}
	var ref struct {
		RenderDateStrings map[string]string `json:"render_date_strings"`
		Cases             []refCase         `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	convRaw, err := os.ReadFile(filepath.Join(refDir, "conversations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var convs []refConversation
	if err := json.Unmarshal(convRaw, &convs); err != nil {
		t.Fatal(err)
	}
	byID := map[string]refConversation{}
	for _, c := range convs {
		byID[c.ID] = c
	}
	// Renderings carry the render date; today's strings replace them.
	now := time.Now()
	dates := map[string]string{}
	for f, s := range ref.RenderDateStrings {
		dates[s] = now.Format(strftimeLayout(f))
	}
	compiled := map[string]*Template{}
	agree, plainAgree, plain := 0, 0, 0
	var failures []string
	for _, c := range ref.Cases {
		tmpl, ok := compiled[c.Template]
		if !ok {
			src, err := os.ReadFile(filepath.Join(refDir, c.Template))
			if err != nil {
				t.Fatal(err)
			}
			if tmpl, err = Compile(string(src)); err != nil {
				failures = append(failures, c.Template+": compile: "+err.Error())
			}
			compiled[c.Template] = tmpl
		}
		want := c.Jinja2
		if want == nil {
			want = c.Llamacpp
		}
		if want != nil {
			w := *want
			for old, nw := range dates {
				w = strings.ReplaceAll(w, old, nw)
			}
			want = &w
		}
		var got string
		var rerr error = ErrRender
		if tmpl != nil {
			got, rerr = tmpl.RenderConversation(Conversation{Messages: byID[c.Conversation].Messages,
				AddGenerationPrompt: c.AddGenerationPrompt, BOSToken: c.BOS, EOSToken: c.EOS})
		}
		isPlain := !strings.HasPrefix(c.Conversation, "tool_call") && c.Conversation != "content_parts"
		if isPlain {
			plain++
		}
		ok = (want == nil && rerr != nil) || (want != nil && rerr == nil && got == *want)
		if ok {
			agree++
			if isPlain {
				plainAgree++
			}
			continue
		}
		why := "differs"
		switch {
		case rerr != nil:
			why = "error: " + firstLine(rerr.Error())
		case want == nil:
			why = "rendered where both references refuse"
		}
		if cause, ok := knownDifferences[c.Template+" × "+c.Conversation]; ok {
			why += " (known: " + cause + ")"
		}
		failures = append(failures, c.Template+" × "+c.Conversation+": "+why)
	}
	t.Logf("agreement: %d of %d cases (plain-text conversations: %d of %d)", agree, len(ref.Cases), plainAgree, plain)
	for _, f := range failures {
		t.Log("  " + f)
	}
	// Floor measured on this code (611; the target is 590), and
	// every plain-text conversation must agree.
	if agree < agreementFloor {
		t.Errorf("agreement %d fell below the measured floor %d", agree, agreementFloor)
	}
	if plainAgree != plain {
		t.Errorf("plain-text conversations: %d of %d agree; all must", plainAgree, plain)
	}
}

const agreementFloor = 611

// knownDifferences are the cases still rendered differently, with the
// cause found for each.
var knownDifferences = map[string]string{
	"meetkai-functionary-medium-v3.2.jinja × tool_call_object_args": "jinja2 refuses str + dict arguments; " +
		"llama.cpp's engine stringifies the dict as compact JSON, the retry's engine as a Python repr",
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// strftimeLayout maps the four strftime formats the reference names to Go.
func strftimeLayout(f string) string {
	r := strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%B", "January", "%b", "Jan")
	return r.Replace(f)
}
