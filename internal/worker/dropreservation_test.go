package worker

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCanceledTransferReturnsDecodesPages pins where a failed transfer's
// reservation is released (transfer.PageSink.Drop does not): the decode
// handler passes Await's error to Reservation.Done. A client that reserves
// and then goes away before any KV arrives leaves every page free.
func TestCanceledTransferReturnsDecodesPages(t *testing.T) {
	dec, _ := newTestWorker(t, Decode)
	srv := httptest.NewServer(dec)
	defer srv.Close()
	total := dec.Info().PagesTotal
	ctx, cancel := context.WithCancel(t.Context())
	body := `{"transfer_id":7,"nonce":9,"request":{"ID":"r","Tenant":"t","Prompt":[` + strings.Repeat("5,", 99) + `5],"MaxTokens":4}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/worker/decode", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, "handoff_tokens") {
		t.Fatalf("no reservation line: %q %v", line, err)
	}
	if free := dec.Info().PagesFree; free >= total {
		t.Fatalf("reservation holds no page: %d of %d free", free, total)
	}
	cancel()
	resp.Body.Close()
	for i := 0; dec.Info().PagesFree != total; i++ {
		if i == 2000 {
			t.Fatalf("canceled transfer kept its pages: %d of %d free", dec.Info().PagesFree, total)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
