// Package english counts things in words: "1 Target", "2 Targets",
// "3 repositories". Every count solar prints goes through Count, so that no
// output says "1 problems".
package english

import (
	"strconv"
	"strings"
)

// Count is n and the noun, plural unless n is 1: "1 Target", "0 Targets",
// "2 repositories", "2 indexes".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + Plural(noun)
}

// Plural is the plural of a regular English noun: a consonant and y become
// ies (repository), a hissing end takes es (index, match), the rest s.
func Plural(noun string) string {
	switch {
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	}
	return noun + "s"
}
