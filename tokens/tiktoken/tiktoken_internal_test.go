package tiktoken

import (
	"os"
	"os/exec"
	"testing"

	"github.com/steadyllm/steady/tokens"
)

// TestImport_BuildsNoVocabulary: importing registers both encodings without building either;
// the first Count builds its own and only its own. It runs in a process of its own, where no
// other test has counted yet.
func TestImport_BuildsNoVocabulary(t *testing.T) {
	if os.Getenv("TIKTOKEN_FRESH_PROCESS") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestImport_BuildsNoVocabulary$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TIKTOKEN_FRESH_PROCESS=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	o, _ := tokens.Lookup(tokens.O200kBase)
	lo, lc := o200k, cl100k
	if lo.codec != nil || lc.codec != nil {
		t.Fatal("a vocabulary was built at import")
	}
	if o.Count("") != 0 || lo.codec != nil {
		t.Fatal("counting the empty string built a vocabulary")
	}
	if o.Count("hello world") != 2 {
		t.Fatal("o200k_base counts hello world as other than 2 tokens")
	}
	if lo.codec == nil || lc.codec != nil {
		t.Errorf("after counting with o200k_base: o200k built %v, cl100k built %v", lo.codec != nil, lc.codec != nil)
	}
}
