package engine

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
	"github.com/bulkhead-llm/bulkhead/internal/kvcache"
)

// The transcripts in testdata/*.txt drive a Machine with messages and state
// what it must answer, in the style of etcd raft's datadriven tests. A block
// is a command line, a "----" line, and the expected output up to a blank
// line; "#" lines are comments. After every command the runner prints the
// Ready in the order the shell acts on it (events, replies, then the
// batch it runs), advances, and prints the pool and
// every request the scheduler tracks:
//
//	event <id>: token <t> | handoff ... | [end] finish/error/handoff
//	reply <id>: pages=[...] | error: <text>
//	batch <id>: pos=<p> n=<tokens> pages=[...] [sample]
//	pool free=<pages> cached=<entries> leases=<n> tracked=<n> queue=<n> map=<one char a page>
//	req <id>: <state> computed=<n> generated=<n> pages=<n>
//
// The map has one character per page, page 1 first: '.' free, 'w' owned and
// partly written, 'W' owned and full, 's' a shared prefix-cache page, 'o'
// freed by its owner but still leased to a transfer.
//
// The expected outputs are written by hand from the spec. -rewrite replaces
// them with what the machine says, for a reviewer to diff; never commit a
// rewrite unread.
var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with the actual output")

// transcriptVocab is the fake model's vocabulary: a run's logits are one-hot.
const transcriptVocab = 32

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTranscript(t, f) })
	}
}

type block struct {
	line     int
	cmd      string
	expected string
}

func parseTranscript(t *testing.T, path string) (blocks []block, comments map[int][]string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	comments = map[int][]string{}
	n := 0
	var cur *block
	var out []string
	inOutput := false
	flush := func() {
		if cur != nil {
			cur.expected = strings.Join(out, "\n")
			blocks = append(blocks, *cur)
		}
		cur, out, inOutput = nil, nil, false
	}
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case inOutput && line == "":
			flush()
		case inOutput:
			out = append(out, line)
		case cur == nil && (line == "" || strings.HasPrefix(line, "#")):
			comments[len(blocks)] = append(comments[len(blocks)], line)
		case cur == nil:
			cur = &block{line: n, cmd: line}
		case line == "----":
			inOutput = true
		default:
			t.Fatalf("%s:%d: want ---- after the command, got %q", path, n, line)
		}
	}
	if cur != nil {
		if !inOutput {
			t.Fatalf("%s:%d: command without ----", path, cur.line)
		}
		flush()
	}
	return blocks, comments
}

func runTranscript(t *testing.T, path string) {
	blocks, comments := parseTranscript(t, path)
	r := &transcript{t: t}
	var rewritten strings.Builder
	for i, b := range blocks {
		got := r.do(b.cmd)
		for _, c := range comments[i] {
			rewritten.WriteString(c + "\n")
		}
		fmt.Fprintf(&rewritten, "%s\n----\n%s\n\n", b.cmd, got)
		if got != b.expected && !*rewrite {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, b.line, b.cmd, indent(got), indent(b.expected))
		}
	}
	for _, c := range comments[len(blocks)] {
		rewritten.WriteString(c + "\n")
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(rewritten.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r.m != nil {
		r.m.Step(&CloseMsg{})
		r.m.Step(&GraceOverMsg{})
		r.m.Ready()
		r.m.Advance()
		if err := r.pool.CheckDrained(); err != nil {
			t.Errorf("%s: after close and grace: %v", path, err)
		}
	}
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// transcript is the machine under test and its pool.
type transcript struct {
	t    *testing.T
	m    *Machine
	pool *kvcache.Pool
}

// do runs one command and renders what the machine said.
func (r *transcript) do(cmdLine string) string {
	fields := strings.Fields(cmdLine)
	cmd, args := fields[0], parseArgs(r.t, fields[1:])
	if cmd == "new" {
		return r.create(args)
	}
	if r.m == nil {
		r.t.Fatalf("%q before new", cmdLine)
	}
	var out []string
	id := uint64(args.int("id", 0))
	switch cmd {
	case "submit", "reserve", "prefill":
		req := Request{Tenant: args.str("tenant", ""), CacheSalt: []byte(args.str("salt", "")),
			Prompt: args.tokens("prompt"), MaxTokens: args.int("max", 1), StopTokens: args.tokens("stop"),
			IgnoreEOS: args.has("ignore-eos")}
		msg, err := r.m.admission().admit(id, req, cmd == "prefill")
		if err != nil {
			return "refused: " + err.Error()
		}
		if cmd == "reserve" {
			r.m.Step(&ReserveMsg{SubmitMsg: *msg})
		} else {
			r.m.Step(msg)
		}
	case "cancel":
		r.m.Step(&CancelMsg{ID: id})
	case "verified":
		r.m.Step(&KVVerifiedMsg{ID: id})
	case "transfer-failed":
		r.m.Step(&TransferFailedMsg{ID: id, Err: errors.New(args.str("err", "transfer failed"))})
	case "release":
		var err error
		if s := args.str("err", ""); s != "" {
			err = errors.New(s)
		}
		r.m.Step(&HandoffReleasedMsg{ID: id, Err: err})
	case "deadline":
		r.m.Step(&DeadlinePassedMsg{ID: id})
	case "close":
		r.m.Step(&CloseMsg{})
	case "grace-over":
		r.m.Step(&GraceOverMsg{})
	case "run":
		r.m.Step(r.stepResult(args))
	case "ready":
	default:
		r.t.Fatalf("unknown command %q", cmd)
	}
	out = append(out, r.render()...)
	return strings.Join(out, "\n")
}

// create builds a machine on a small pool (one layer, one element a token:
// the machine never looks at KV values, only at the pages' bookkeeping).
func (r *transcript) create(a args) string {
	pool, err := kvcache.New(kvcache.Config{PageSize: a.int("page", 4), DType: gguf.F32, Layers: 1, KVDim: 1,
		Tokens: a.int("pages", 8) * a.int("page", 4)})
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := NewMachine(Config{MaxContext: a.int("context", 16), TokenBudget: a.int("budget", 8),
		MaxRunning: a.int("running", 4), ReserveQueue: a.int("queue", 0), VocabSize: transcriptVocab,
		EOG: []int32{int32(a.int("eog", 31))}}, pool, a.has("layered"))
	if err != nil {
		return "refused: " + err.Error()
	}
	r.m, r.pool = m, pool
	return strings.Join(r.render(), "\n")
}

// stepResult is the fake forward pass: "run 1=5 2=7" makes the logits of
// request 1's row pick token 5 and of 2's pick 7 (rows of other requests
// are all zero); "run fail" fails the pass.
func (r *transcript) stepResult(a args) *StepResultMsg {
	if a.has("fail") {
		return &StepResultMsg{Err: errors.New("device lost")}
	}
	var b *Batch
	if r.m.inflight != nil {
		b = &r.m.batch
	}
	if b == nil {
		return &StepResultMsg{}
	}
	res := &StepResultMsg{Logits: make([][]float32, len(b.IDs))}
	for i, id := range b.IDs {
		res.Logits[i] = make([]float32, transcriptVocab)
		if tok, ok := a[strconv.FormatUint(id, 10)]; ok {
			n, err := strconv.Atoi(tok)
			if err != nil {
				r.t.Fatalf("run: token %q", tok)
			}
			res.Logits[i][n] = 1
		}
	}
	return res
}

// render prints the Ready, advances, and prints the state after it.
func (r *transcript) render() []string {
	rd := r.m.Ready()
	var out []string
	for _, d := range rd.Events {
		out = append(out, fmt.Sprintf("event %d: %s", d.ID, eventText(d)))
	}
	for _, rp := range rd.Replies {
		if rp.Err != nil {
			out = append(out, fmt.Sprintf("reply %d: error: %v", rp.ID, rp.Err))
		} else {
			out = append(out, fmt.Sprintf("reply %d: pages=%v", rp.ID, rp.Pages))
		}
	}
	if rd.Batch != nil {
		for _, it := range r.m.inflight.Items {
			s := fmt.Sprintf("batch %d: pos=%d n=%d pages=%v", it.ID, it.Pos, len(it.Tokens), it.Pages)
			if it.Sample {
				s += " sample"
			}
			out = append(out, s)
		}
	}
	r.m.Advance()
	return append(out, r.state()...)
}

func eventText(d Delivery) string {
	ev := d.Event
	var s string
	switch {
	case ev.Err != nil:
		s = "error: " + ev.Err.Error()
	case ev.Finish != nil:
		u := ev.Finish.Usage
		s = fmt.Sprintf("finish %s prompt=%d completion=%d cached=%d", ev.Finish.Reason, u.PromptTokens, u.CompletionTokens, u.CachedTokens)
	case ev.handoff != nil:
		s = fmt.Sprintf("handoff tokens=%d cached=%d pages=%v", ev.handoff.Tokens, ev.handoff.Cached, ev.handoff.Pages)
	case d.Final:
		s = "(stream closed)"
	default:
		s = fmt.Sprintf("token %d", ev.Token)
	}
	if d.Pinned {
		s += " pinned"
	}
	if d.Final {
		s = "end " + s
	}
	return s
}

func (r *transcript) state() []string {
	infos := r.pool.PageInfos(nil)
	var pm strings.Builder
	leases := 0
	for _, in := range infos[1:] {
		leases += int(in.Leases)
		pm.WriteByte(map[kvcache.PageState]byte{kvcache.PageFree: '.', kvcache.PageWriting: 'w',
			kvcache.PageWritten: 'W', kvcache.PageShared: 's', kvcache.PageOrphan: 'o'}[in.State])
	}
	out := []string{fmt.Sprintf("pool free=%d cached=%d leases=%d tracked=%d queue=%d map=%s",
		r.pool.FreePages(), r.pool.CachedPages(), leases, r.m.Tracked(), r.m.resq.len(), pm.String())}
	for _, q := range r.m.Status().Requests {
		out = append(out, fmt.Sprintf("req %d: %s computed=%d generated=%d pages=%d", q.ID, q.Phase, q.Computed, q.Generated, q.Pages))
	}
	return out
}

// args are a command's key=value (or bare key) arguments.
type args map[string]string

func parseArgs(t *testing.T, fields []string) args {
	a := args{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		a[k] = v
	}
	return a
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) str(k, def string) string {
	if v, ok := a[k]; ok {
		return strings.ReplaceAll(v, "_", " ")
	}
	return def
}

func (a args) int(k string, def int) int {
	v, ok := a[k]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		panic(fmt.Sprintf("argument %s=%q is not a number", k, v))
	}
	return n
}

// tokens parses "1..5" (1 2 3 4 5) or "3,9,4" or a mix ("1..3,7").
func (a args) tokens(k string) []int32 {
	v, ok := a[k]
	if !ok || v == "" {
		return nil
	}
	var toks []int32
	for _, part := range strings.Split(v, ",") {
		if lo, hi, ok := strings.Cut(part, ".."); ok {
			l, _ := strconv.Atoi(lo)
			h, _ := strconv.Atoi(hi)
			for i := l; i <= h; i++ {
				toks = append(toks, int32(i))
			}
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			panic(fmt.Sprintf("token %q", part))
		}
		toks = append(toks, int32(n))
	}
	return slices.Clip(toks)
}
