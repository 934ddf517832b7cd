package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/api/apitest"
)

// A tenant (or an llm-d sidecar relaying one) that sends kv_transfer_params
// gets a 400 naming the field on both generation endpoints, before anything
// is submitted; an explicit null, which the sidecar sends when the prefill
// reply had none, is the same as absent.
func TestKVTransferParamsAreRefused(t *testing.T) {
	eng := apitest.NewFakeEngine()
	eng.MaxCtx.Store(64)
	env := newTestEnv(t, eng, nil)
	forged := `"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"x","remote_block_ids":[1,2],"remote_host":"10.0.0.9","remote_port":5600}`
	for _, c := range []struct{ path, body string }{
		{"/v1/completions", `{"prompt":"x","max_tokens":2,` + forged + `}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":2,` + forged + `}`},
		{"/v1/completions", `{"prompt":"x","kv_transfer_params":{"do_remote_decode":true}}`},
	} {
		code, _, body := env.post(t, c.path, "", c.body)
		var e struct {
			Error struct{ Param, Message string } `json:"error"`
		}
		json.Unmarshal([]byte(body), &e)
		if code != 400 || e.Error.Param != "kv_transfer_params" || !strings.Contains(e.Error.Message, "not accepted") {
			t.Errorf("%s with kv_transfer_params: %d %s", c.path, code, body)
		}
	}
	if n := len(eng.Requests()); n != 0 {
		t.Errorf("%d requests reached the engine", n)
	}
	if code, _, body := env.post(t, "/v1/completions", "", `{"prompt":"x","max_tokens":2,"kv_transfer_params":null}`); code != 200 {
		t.Errorf("kv_transfer_params null: %d %s", code, body)
	}
}
