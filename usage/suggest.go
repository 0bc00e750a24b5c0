package usage

import (
	"slices"
	"strings"
)

// Suggest returns the candidates word was probably meant to be, best
// first, at most three: those within a small edit distance (a typo, a
// swapped pair of letters) and those word is the start of. None when
// nothing is close: a wrong guess is worse than no guess.
func Suggest(word string, candidates []string) []string {
	word = strings.ToLower(word)
	if len(word) < 2 {
		// One letter is one edit from every other letter.
		return nil
	}
	type scored struct {
		name string
		d    int
	}
	var out []scored
	for _, c := range candidates {
		d := distance(word, strings.ToLower(c))
		switch {
		case d <= maxDistance(word):
		case len(word) >= 2 && strings.HasPrefix(strings.ToLower(c), word):
			d = len(c) - len(word)
		default:
			continue
		}
		out = append(out, scored{c, d})
	}
	slices.SortStableFunc(out, func(a, b scored) int { return a.d - b.d })
	var names []string
	for _, s := range out {
		if !slices.Contains(names, s.name) {
			names = append(names, s.name)
		}
		if len(names) == 3 {
			break
		}
	}
	return names
}

// maxDistance is how many edits still look like a typo of word: one for a
// short word, a third of a longer one.
func maxDistance(word string) int {
	return max(1, len(word)/3)
}

// distance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two adjacent letters
// each count one.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// d[i][j] is the distance between ra[:i] and rb[:j].
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// oneOf joins values as "a, b or c".
func oneOf(values []string) string { return join(values, " or ") }

// allOf joins values as "a, b and c".
func allOf(values []string) string { return join(values, " and ") }

func join(values []string, last string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + last + values[len(values)-1]
}
