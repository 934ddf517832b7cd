package grammar

// Tokens is what a constraint needs from a tokenizer.
type Tokens interface {
	VocabSize() int
	Piece(id int32) []byte
	IsEOG(id int32) bool
	BOS() int32
}

// TokenVocab is a tokenizer's vocabulary ready for constraints: the trie
// over the pieces output text can be spelled with, and the end tokens.
// Build it once per tokenizer; it is safe for concurrent use.
type TokenVocab struct {
	v      *Vocab
	pieces [][]byte
	eog    []int32
}

// NewTokenVocab builds t's vocabulary. End-of-generation tokens are kept
// apart (a constraint allows them exactly when the grammar accepts); BOS
// and control tokens (when t has IsControl) are never allowed: their text
// is not output text.
func NewTokenVocab(t Tokens) *TokenVocab {
	cc, _ := t.(interface{ IsControl(id int32) bool })
	n := t.VocabSize()
	tv := &TokenVocab{pieces: make([][]byte, n)}
	for id := range int32(n) {
		switch {
		case t.IsEOG(id):
			tv.eog = append(tv.eog, id)
		case id == t.BOS() || (cc != nil && cc.IsControl(id)):
		default:
			tv.pieces[id] = t.Piece(id)
		}
	}
	tv.v = NewVocab(tv.pieces)
	return tv
}

// Vocab is the trie.
func (tv *TokenVocab) Vocab() *Vocab { return tv.v }

// Constraint is a fresh constraint of g for one sequence.
func (tv *TokenVocab) Constraint(g *Grammar) *Constraint {
	return NewConstraint(g, tv.v, tv.piece, tv.eog)
}

func (tv *TokenVocab) piece(id int32) []byte {
	if id >= 0 && int(id) < len(tv.pieces) {
		return tv.pieces[id]
	}
	return nil
}
