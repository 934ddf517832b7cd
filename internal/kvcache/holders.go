package kvcache

// holderSet is the set of tables referencing a shared page. Most shared
// pages have a few holders, so they sit in a small array the ownership
// check scans without hashing; a popular prefix spills into a map.
type holderSet struct {
	small [4]Owner
	n     int
	big   map[Owner]struct{}
}

func (h *holderSet) len() int { return h.n + len(h.big) }

func (h *holderSet) has(o Owner) bool {
	for _, x := range h.small[:h.n] {
		if x == o {
			return true
		}
	}
	_, ok := h.big[o]
	return ok
}

// add inserts o, which the caller knows is absent.
func (h *holderSet) add(o Owner) {
	if h.n < len(h.small) {
		h.small[h.n] = o
		h.n++
		return
	}
	if h.big == nil {
		h.big = map[Owner]struct{}{}
	}
	h.big[o] = struct{}{}
}

// remove deletes o and reports whether it was present.
func (h *holderSet) remove(o Owner) bool {
	for i, x := range h.small[:h.n] {
		if x == o {
			h.n--
			h.small[i] = h.small[h.n]
			return true
		}
	}
	if _, ok := h.big[o]; ok {
		delete(h.big, o)
		return true
	}
	return false
}
