package kvcache

import (
	"fmt"
	"testing"

	"github.com/bulkhead-llm/bulkhead/internal/gguf"
)

func BenchmarkReserveFree(b *testing.B) {
	p := newTestPool(b, 1024, 16)
	pt := p.NewTable()
	for b.Loop() {
		if err := p.Reserve(pt, 16); err != nil {
			b.Fatal(err)
		}
		p.Free(pt)
	}
}

func BenchmarkMatchPrefix(b *testing.B) {
	const blocks = 32
	p := newTestPool(b, 2*blocks, 16)
	toks := seq(1, blocks*16+1)
	a := p.NewTable()
	writeTokens(b, p, a, 0, toks[:blocks*16])
	p.Cache(a, "s", toks[:blocks*16])
	p.Free(a)
	for _, bc := range []struct{ name, salt string }{{"hit", "s"}, {"miss", "other"}} {
		b.Run(fmt.Sprintf("%s_%dblocks", bc.name, blocks), func(b *testing.B) {
			pt := p.NewTable()
			for b.Loop() {
				if _, err := p.MatchPrefix(pt, bc.salt, toks); err != nil {
					b.Fatal(err)
				}
				p.Free(pt)
			}
		})
	}
}

// BenchmarkOwnershipCheck measures AppendStepPages for one decode step of a
// sequence with the given number of pages, its own or shared through the
// prefix cache; ns/page is the per-page cost.
func BenchmarkOwnershipCheck(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, pages := range []int{1, 64, 512} {
			b.Run(fmt.Sprintf("shared=%v/pages=%d", shared, pages), func(b *testing.B) {
				p, err := New(Config{PageSize: 16, DType: gguf.F16, Layers: 1, KVDim: 8, Tokens: pages * 16})
				if err != nil {
					b.Fatal(err)
				}
				pt := p.NewTable()
				n := pages*16 - 1
				_ = p.Reserve(pt, n+1)
				if err := p.Commit(pt, 0, n); err != nil {
					b.Fatal(err)
				}
				if shared {
					p.Cache(pt, "s", make([]int32, n))
				}
				buf := make([]int32, 0, pages)
				for b.Loop() {
					if buf, err = p.AppendStepPages(buf[:0], pt, n, 1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*pages), "ns/page")
			})
		}
	}
}

// BenchmarkDecodeStep is the pool's share of one decode step of one
// sequence: Reserve, the ownership check, Commit and, every PageSize
// tokens, sealing the full page into the prefix cache. The sequence
// restarts (its pages freed) when it reaches the pool's end.
func BenchmarkDecodeStep(b *testing.B) {
	const ps, total = 16, 2048
	p := newTestPool(b, total/ps, ps)
	toks := seq(1, total)
	pt := p.NewTable()
	p.GrowTable(pt, total)
	buf := make([]int32, 0, total/ps)
	pos := 0
	for b.Loop() {
		if pos == total {
			p.Free(pt)
			p.DropCache()
			pos = 0
		}
		if err := p.Reserve(pt, pos+1); err != nil {
			b.Fatal(err)
		}
		var err error
		if buf, err = p.AppendStepPages(buf[:0], pt, pos, 1); err != nil {
			b.Fatal(err)
		}
		if err := p.Commit(pt, pos, 1); err != nil {
			b.Fatal(err)
		}
		pos++
		p.Cache(pt, "salt", toks[:pos])
	}
}
