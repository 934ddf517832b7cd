package kvcache

import "testing"

func TestPageInfosFollowOwnershipAndLeases(t *testing.T) {
	p := newTestPool(t, 4, 4)
	infos := p.PageInfos(nil)
	if len(infos) != 5 || infos[0].State != PageSentinel {
		t.Fatalf("want sentinel then 4 pages, got %+v", infos)
	}
	for _, in := range infos[1:] {
		if in.State != PageFree {
			t.Fatalf("fresh pool page not free: %+v", in)
		}
	}
	tb := p.NewTable()
	if err := p.Reserve(tb, 6); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(tb, 0, 4); err != nil {
		t.Fatal(err)
	}
	l, err := p.Lease(tb, 1)
	if err != nil {
		t.Fatal(err)
	}
	infos = p.PageInfos(infos[:0])
	first, second := infos[tb.Entry(0).Page], infos[tb.Entry(1).Page]
	if first.State != PageWritten || first.Owner != tb.Owner() || first.Written != 4 || first.Refs != 1 {
		t.Fatalf("full page: %+v", first)
	}
	if second.State != PageWriting || second.Leases != 1 || second.Epoch != tb.Entry(1).Epoch {
		t.Fatalf("leased page: %+v", second)
	}
	p.Free(tb)
	infos = p.PageInfos(infos[:0])
	if infos[tb0(l)].State != PageOrphan {
		t.Fatalf("freed leased page: %+v", infos[tb0(l)])
	}
	if err := p.Release(l); err != nil {
		t.Fatal(err)
	}
	infos = p.PageInfos(infos[:0])
	for _, in := range infos[1:] {
		if in.State != PageFree {
			t.Fatalf("page not free after drain: %+v", in)
		}
	}
}

func tb0(l Lease) int32 { return l.Entry.Page }

func TestPageInfosDoesNotAllocateWithRoom(t *testing.T) {
	p := newTestPool(t, 4, 8)
	buf := make([]PageInfo, 0, 9)
	if n := testing.AllocsPerRun(20, func() { buf = p.PageInfos(buf[:0]) }); n != 0 {
		t.Fatalf("PageInfos allocated %v times per call", n)
	}
}
