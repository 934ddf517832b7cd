package tokenizer

// Segment is a piece of text with its own special-token policy: a chat
// template's markers may become control tokens while the user's message
// between them stays text (DESIGN I9).
type Segment struct {
	Text         string
	ParseSpecial bool
}

// EncodeSegments tokenizes the concatenation of segs as Encode would, but
// recognises control-token text only inside segments that allow it. Plain
// text meeting at a segment boundary is tokenized as one run, so splitting
// a text into segments changes nothing but which control tokens are parsed.
func (t *Tokenizer) EncodeSegments(segs []Segment, addSpecial bool) []int32 {
	var frags []fragment
	size := 0
	for _, sg := range segs {
		size += len(sg.Text)
		for _, fr := range t.partition(sg.Text, sg.ParseSpecial) {
			if n := len(frags); n > 0 && fr.id < 0 && frags[n-1].id < 0 {
				frags[n-1].text += fr.text
				continue
			}
			frags = append(frags, fr)
		}
	}
	return t.encodeFragments(frags, size, addSpecial)
}
