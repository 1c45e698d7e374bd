package diag

// Count is the number of problems of severity s: the summaries' "3 problems
// (1 error)", vet's "2 warnings".
func (l List) Count(s Severity) int {
	n := 0
	for _, p := range l {
		if p.Severity == s {
			n++
		}
	}
	return n
}
