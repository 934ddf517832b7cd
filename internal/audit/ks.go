package audit

import (
	"math"
	"slices"
)

// ksTwoSample returns the two-sample Kolmogorov–Smirnov statistic D (the
// largest gap between the two empirical distribution functions) and its
// asymptotic p-value under the hypothesis that both samples come from one
// distribution, with Stephens' small-sample correction.
func ksTwoSample(x, y []float64) (d, p float64) {
	if len(x) == 0 || len(y) == 0 {
		return 0, 1
	}
	a, b := slices.Clone(x), slices.Clone(y)
	slices.Sort(a)
	slices.Sort(b)
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		v := min(a[i], b[j])
		for i < len(a) && a[i] == v {
			i++
		}
		for j < len(b) && b[j] == v {
			j++
		}
		d = max(d, math.Abs(float64(i)/float64(len(a))-float64(j)/float64(len(b))))
	}
	ne := float64(len(a)*len(b)) / float64(len(a)+len(b))
	sq := math.Sqrt(ne)
	return d, kolmogorovQ((sq + 0.12 + 0.11/sq) * d)
}

// kolmogorovQ is the Kolmogorov distribution's survival function,
// 2 Σ (-1)^(k-1) exp(-2 k² λ²).
func kolmogorovQ(lambda float64) float64 {
	if lambda < 0.2 {
		return 1
	}
	sum := 0.0
	for k := 1; k <= 100; k++ {
		term := math.Exp(-2 * float64(k*k) * lambda * lambda)
		if k%2 == 1 {
			sum += term
		} else {
			sum -= term
		}
		if term < 1e-12 {
			break
		}
	}
	return min(1, max(0, 2*sum))
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
