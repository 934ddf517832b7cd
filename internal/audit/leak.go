package audit

// issuedCanary is one probe's canary, for leak attribution.
type issuedCanary struct {
	Probe  int
	Tenant int
	Words  []string
}

// leakIndex finds fragments of other probes' canaries in an output. A
// fragment is two consecutive words of another canary (a pair the
// victim's own canary does not contain), or a single word that belongs to
// exactly one other canary and not to the victim's. A correct model's
// output depends only on its own prompt, so either one in the output means
// the request read state it did not write.
type leakIndex struct {
	style   Style
	all     []issuedCanary
	owners  map[string][]int // word -> indexes into all
	bigrams map[[2]string][]int
}

func newLeakIndex(style Style, all []issuedCanary) *leakIndex {
	ix := &leakIndex{style: style, all: all, owners: map[string][]int{}, bigrams: map[[2]string][]int{}}
	for i, c := range all {
		seen := map[string]bool{}
		for j, w := range c.Words {
			if !seen[w] {
				ix.owners[w] = append(ix.owners[w], i)
				seen[w] = true
			}
			if j > 0 {
				bg := [2]string{c.Words[j-1], w}
				ix.bigrams[bg] = append(ix.bigrams[bg], i)
			}
		}
	}
	return ix
}

// sources returns the probes whose canary fragments appear in output,
// excluding the victim's own probe, in the order of all.
func (ix *leakIndex) sources(victim issuedCanary, output string) []issuedCanary {
	fields := outputFields(ix.style, output)
	own := map[string]bool{}
	ownPairs := map[[2]string]bool{}
	for j, w := range victim.Words {
		own[w] = true
		if j > 0 {
			ownPairs[[2]string{victim.Words[j-1], w}] = true
		}
	}
	hit := map[int]bool{}
	for j, w := range fields {
		if owners := ix.owners[w]; len(owners) == 1 && !own[w] {
			hit[owners[0]] = true
		}
		if j > 0 {
			bg := [2]string{fields[j-1], w}
			if !ownPairs[bg] {
				for _, i := range ix.bigrams[bg] {
					hit[i] = true
				}
			}
		}
	}
	var out []issuedCanary
	for i, c := range ix.all {
		if hit[i] && c.Probe != victim.Probe {
			out = append(out, c)
		}
	}
	return out
}
