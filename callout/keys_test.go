package callout_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/solar-pipeline/solar/callout"
)

// TestLoadKeys: each key must be of its kind and its owner's alone.
func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := callout.NewKeys(dir); err != nil {
		t.Fatal(err)
	}
	acc, x := filepath.Join(dir, callout.AccountKeyFile), filepath.Join(dir, callout.XKeyFile)
	if _, xk, err := callout.LoadKeys(acc, x); err != nil || xk == nil {
		t.Fatalf("the keys NewKeys wrote: %v", err)
	}
	if _, xk, err := callout.LoadKeys(acc, ""); err != nil || xk != nil {
		t.Fatalf("no xkey: %v", err)
	}
	for name, files := range map[string][2]string{
		"swapped":         {x, acc},
		"xkey as account": {x, ""},
	} {
		if _, _, err := callout.LoadKeys(files[0], files[1]); err == nil || !strings.Contains(err.Error(), "not a") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := os.Chmod(acc, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, err := callout.LoadKeys(acc, x); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a group-readable key: %v", err)
	}
}
