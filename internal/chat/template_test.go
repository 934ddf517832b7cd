package chat

import (
	"errors"
	"testing"
)

// Templates as published with popular models, written out here.
const (
	chatML = `{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`

	llama3 = `{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}`

	mistral = `{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}`
)

func TestRenderProducesEachModelsPromptLayout(t *testing.T) {
	conv := []Message{{"system", "Be brief."}, {"user", "Hi"}}
	cases := []struct {
		name, src string
		msgs      []Message
		want      string
	}{
		{"chatml", chatML, conv,
			"<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"},
		{"llama3", llama3, conv,
			"<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
		{"mistral", mistral, []Message{{"user", "Hi"}, {"assistant", "Hello"}, {"user", "Bye"}},
			"<s>[INST] Hi [/INST]Hello</s>[INST] Bye [/INST]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Compile(c.src)
			if err != nil {
				t.Fatal(err)
			}
			bos := "<s>"
			if c.name == "llama3" {
				bos = "<|begin_of_text|>"
			}
			got, err := tmpl.Render(c.msgs, Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: "</s>"})
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestRenderSurfacesTemplateRaiseException(t *testing.T) {
	tmpl, err := Compile(mistral)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tmpl.Render([]Message{{"assistant", "first"}}, Options{})
	if !errors.Is(err, ErrRender) {
		t.Fatalf("err = %v, want ErrRender", err)
	}
}

func TestCompileEmptyTemplateIsErrNoTemplate(t *testing.T) {
	if _, err := Compile("  \n"); !errors.Is(err, ErrNoTemplate) {
		t.Fatalf("err = %v, want ErrNoTemplate", err)
	}
}

func FuzzRender(f *testing.F) {
	f.Add(chatML, "user", "hello")
	f.Add(mistral, "assistant", "x")
	f.Add("{% if %}", "user", "")
	f.Fuzz(func(t *testing.T, src, role, content string) {
		tmpl, err := Compile(src)
		if err != nil {
			return
		}
		_, _ = tmpl.Render([]Message{{role, content}}, Options{AddGenerationPrompt: true})
	})
}
