//go:build cgo

package payidem

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The manifest of each prebuilt library, lib/GOOS_GOARCH/SOURCES, as
// scripts/dist/go-lib.sh writes and checks it: lines "SHA256HEX  PATH"
// (PATH from the repository root), the source files in byte order, then the
// header copy, then the library; lines starting with # are comments. The
// functions below compute the same list; TestManifestCheckAgreesWithGoLibSh
// holds the two implementations to the same answers.

// libSourceRoots are the files and directories libpayidem.a is built from
// (tests and benches excluded), as in go-lib.sh.
var libSourceRoots = []string{"Cargo.toml", "Cargo.lock", "core/Cargo.toml", "core/src",
	"ffi/Cargo.toml", "ffi/build.rs", "ffi/src", "ffi/capi/Cargo.toml", "ffi/capi/cbindgen.toml",
	"ffi/capi/src", "include/payidem.h"}

// libPlatforms have a prebuilt library; the first is always required.
var libPlatforms = []string{"linux_amd64", "linux_arm64", "windows_amd64"}

const modulePrefix = "bindings/go/"

type manifestEntry struct{ sum, path string }

func fileSHA256(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// libSourceFiles lists the source files under repo, relative with slashes,
// in byte order.
func libSourceFiles(repo string) ([]string, error) {
	var files []string
	for _, r := range libSourceRoots {
		full := filepath.Join(repo, filepath.FromSlash(r))
		st, err := os.Stat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		if st.Mode().IsRegular() {
			files = append(files, r)
			continue
		}
		if !st.IsDir() {
			continue
		}
		err = filepath.WalkDir(full, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(repo, p)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if !strings.Contains(rel, "/tests/") && !strings.Contains(rel, "/benches/") {
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// moduleFiles are the copies a platform's manifest ends with.
func moduleFiles(plat string) []string {
	return []string{modulePrefix + "include/payidem.h", modulePrefix + "lib/" + plat + "/libpayidem.a"}
}

// currentEntries is what plat's manifest should hold for the files under
// repo now.
func currentEntries(repo, plat string) ([]manifestEntry, error) {
	files, err := libSourceFiles(repo)
	if err != nil {
		return nil, err
	}
	var entries []manifestEntry
	for _, f := range append(files, moduleFiles(plat)...) {
		sum, err := fileSHA256(filepath.Join(repo, filepath.FromSlash(f)))
		if errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(f, modulePrefix) {
			continue
		} else if err != nil {
			return nil, err
		}
		entries = append(entries, manifestEntry{sum, f})
	}
	return entries, nil
}

func readManifest(path string) ([]manifestEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var entries []manifestEntry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sum, path, _ := strings.Cut(line, " ")
		entries = append(entries, manifestEntry{sum, strings.TrimSpace(path)})
	}
	return entries, sc.Err()
}

// firstDifference names, as go-lib.sh --check does, the first file whose
// entry differs: a file of now that the manifest lacks or records with
// another hash, else a recorded file that is gone; "" when they agree.
func firstDifference(recorded, now []manifestEntry) string {
	rec := make(map[string]string, len(recorded))
	for _, e := range recorded {
		rec[e.path] = e.sum
	}
	cur := make(map[string]bool, len(now))
	for _, e := range now {
		cur[e.path] = true
		sum, ok := rec[e.path]
		if !ok {
			return "added: " + e.path
		}
		if sum != e.sum {
			return "changed: " + e.path
		}
	}
	for _, e := range recorded {
		if !cur[e.path] {
			return "removed: " + e.path
		}
	}
	return ""
}

// checkPlatform is go-lib.sh --check for one platform of the repository.
func checkPlatform(repo, plat string) (string, error) {
	manifest := filepath.Join(repo, "bindings", "go", "lib", plat, "SOURCES")
	recorded, err := readManifest(manifest)
	if errors.Is(err, fs.ErrNotExist) {
		return "removed: " + modulePrefix + "lib/" + plat + "/SOURCES", nil
	} else if err != nil {
		return "", err
	}
	now, err := currentEntries(repo, plat)
	if err != nil {
		return "", err
	}
	if d := firstDifference(recorded, now); d != "" {
		return d, nil
	}
	orig, err := os.ReadFile(filepath.Join(repo, "include", "payidem.h"))
	if err != nil {
		return "", err
	}
	cp, err := os.ReadFile(filepath.Join(repo, "bindings", "go", "include", "payidem.h"))
	if err != nil {
		return "", err
	}
	if !bytes.Equal(orig, cp) {
		return "changed: " + modulePrefix + "include/payidem.h (differs from include/payidem.h)", nil
	}
	return "", nil
}

// checkedPlatforms are the platforms go-lib.sh --check verifies in the
// module at dir: the first always, the others when committed.
func checkedPlatforms(dir string) []string {
	plats := []string{libPlatforms[0]}
	for _, p := range libPlatforms[1:] {
		if st, err := os.Stat(filepath.Join(dir, "lib", p)); err == nil && st.IsDir() {
			plats = append(plats, p)
		}
	}
	return plats
}

// insideRepository: this module is bindings/go of a payidem checkout (not
// a copy of the module alone, as `go get` users have).
func insideRepository() bool {
	here, err1 := os.Stat(".")
	there, err2 := os.Stat(filepath.Join(repoRoot, "bindings", "go"))
	_, err3 := os.Stat(filepath.Join(repoRoot, "ffi", "capi", "cbindgen.toml"))
	return err1 == nil && err2 == nil && err3 == nil && os.SameFile(here, there)
}

func TestCommittedLibraryMatchesSources(t *testing.T) {
	plats := checkedPlatforms(".")
	// The copies this module carries match their manifest, in the
	// repository or not.
	for _, plat := range plats {
		recorded, err := readManifest(filepath.Join("lib", plat, "SOURCES"))
		if err != nil {
			t.Fatalf("%s: %v (run make dist)", plat, err)
		}
		for _, f := range moduleFiles(plat) {
			want := ""
			for _, e := range recorded {
				if e.path == f {
					want = e.sum
				}
			}
			got, err := fileSHA256(filepath.FromSlash(strings.TrimPrefix(f, modulePrefix)))
			if err != nil || want == "" || got != want {
				t.Errorf("%s: %s has sha256 %s (%v), manifest records %q", plat, f, got, err, want)
			}
		}
	}
	if !insideRepository() {
		t.Logf("module is not inside the payidem repository (copied alone): " +
			"checking the libraries against the Rust sources is skipped")
		return
	}
	for _, plat := range plats {
		d, err := checkPlatform(repoRoot, plat)
		if err != nil {
			t.Fatalf("%s: %v", plat, err)
		}
		if d != "" {
			t.Errorf("lib/%s/libpayidem.a is stale or its manifest is wrong: %s; run make dist "+
				"(scripts/dist/go-lib.sh)", plat, d)
		}
	}
}

// TestManifestCheckAgreesWithGoLibSh gives go-lib.sh --check and the
// functions above the same scratch trees, changed one way at a time, and
// wants the same verdict and the same file named. The trees are built from
// what the module carries, so that it runs from a copy of the module alone
// too: go-lib.sh's copy (testdata/repository), the source paths of
// lib/linux_amd64/SOURCES with stand-in contents (both checks only hash)
// and the module's header.
func TestManifestCheckAgreesWithGoLibSh(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("go-lib.sh needs bash, which is not on PATH")
	}
	scratch := t.TempDir()
	goLib, err := os.ReadFile(repositoryFile(t, "scripts/dist/go-lib.sh"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, scratch, "scripts/dist/go-lib.sh", string(goLib))
	recorded, err := readManifest(filepath.Join("lib", "linux_amd64", "SOURCES"))
	if err != nil {
		t.Fatal(err)
	}
	moduleHeader := readFile(t, ".", "include/payidem.h")
	for _, e := range recorded {
		switch {
		case strings.HasPrefix(e.path, modulePrefix):
		case e.path == "include/payidem.h":
			writeFile(t, scratch, e.path, moduleHeader)
		default:
			writeFile(t, scratch, e.path, "// stand-in for "+e.path+"\n")
		}
	}
	for _, needed := range []string{"core/src/lib.rs", "ffi/build.rs", "include/payidem.h"} {
		if _, err := os.Stat(filepath.Join(scratch, filepath.FromSlash(needed))); err != nil {
			t.Fatalf("lib/linux_amd64/SOURCES lists no %s, which the steps below change", needed)
		}
	}
	writeFile(t, scratch, "bindings/go/include/payidem.h", moduleHeader)
	plats := []string{"linux_amd64", "linux_arm64"}
	for _, plat := range plats {
		// The check only hashes: a small stand-in library will do.
		writeFile(t, scratch, "bindings/go/lib/"+plat+"/libpayidem.a", "!<arch>\nstand-in "+plat+"\n")
		writeManifest(t, scratch, plat)
	}

	// verdicts runs both checks; want is the difference both must name for
	// linux_amd64 ("" when the tree is fresh).
	verdicts := func(step, want string) {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(scratch, "scripts", "dist", "go-lib.sh"), "--check")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		shErr := cmd.Run()
		goDiff, err := checkPlatform(scratch, "linux_amd64")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if goDiff != want {
			t.Errorf("%s: Go check says %q, want %q", step, goDiff, want)
		}
		if want == "" {
			if shErr != nil {
				t.Errorf("%s: go-lib.sh --check failed (%v): %s", step, shErr, stderr.String())
			}
			return
		}
		var exit *exec.ExitError
		if !errors.As(shErr, &exit) || exit.ExitCode() != 1 {
			t.Errorf("%s: go-lib.sh --check gave %v, want exit status 1", step, shErr)
		}
		if msg := stderr.String(); !strings.Contains(msg, "linux_amd64") ||
			!strings.Contains(msg, want+";") || !strings.Contains(msg, "run make dist") {
			t.Errorf("%s: go-lib.sh --check said %q, want it to name %q and say run make dist", step, msg, want)
		}
	}

	verdicts("fresh tree", "")
	// Tests and benches are not what the library is built from.
	writeFile(t, scratch, "core/src/tests/extra.rs", "// not built into the library\n")
	writeFile(t, scratch, "core/src/benches/extra.rs", "// not built into the library\n")
	verdicts("a tests/ and a benches/ file added", "")

	lib := readFile(t, scratch, "core/src/lib.rs")
	writeFile(t, scratch, "core/src/lib.rs", lib+"\n// edited\n")
	verdicts("core/src/lib.rs edited", "changed: core/src/lib.rs")
	writeFile(t, scratch, "core/src/lib.rs", lib)
	verdicts("core/src/lib.rs restored", "")

	writeFile(t, scratch, "ffi/capi/src/aaa_new.rs", "// new\n")
	verdicts("a source file added", "added: ffi/capi/src/aaa_new.rs")
	os.Remove(filepath.Join(scratch, "ffi", "capi", "src", "aaa_new.rs"))

	build := readFile(t, scratch, "ffi/build.rs")
	os.Remove(filepath.Join(scratch, "ffi", "build.rs"))
	verdicts("ffi/build.rs removed", "removed: ffi/build.rs")
	writeFile(t, scratch, "ffi/build.rs", build)

	stale := readFile(t, scratch, "bindings/go/lib/linux_amd64/libpayidem.a")
	writeFile(t, scratch, "bindings/go/lib/linux_amd64/libpayidem.a", stale+"x")
	verdicts("library copy replaced", "changed: bindings/go/lib/linux_amd64/libpayidem.a")
	writeFile(t, scratch, "bindings/go/lib/linux_amd64/libpayidem.a", stale)

	header := readFile(t, scratch, "include/payidem.h")
	writeFile(t, scratch, "include/payidem.h", header+"/* edited */\n")
	verdicts("include/payidem.h edited", "changed: include/payidem.h")
	writeFile(t, scratch, "include/payidem.h", header)
	verdicts("everything restored", "")

	writeFile(t, scratch, "bindings/go/include/payidem.h", header+"/* copy edited */\n")
	verdicts("header copy edited", "changed: bindings/go/include/payidem.h")
	// Even when the manifest was rewritten to match, a header copy that is
	// not include/payidem.h fails.
	writeManifest(t, scratch, "linux_amd64")
	verdicts("header copy edited, manifest rewritten",
		"changed: bindings/go/include/payidem.h (differs from include/payidem.h)")
}

// writeManifest writes plat's manifest for the files under repo now.
func writeManifest(t *testing.T, repo, plat string) {
	t.Helper()
	now, err := currentEntries(repo, plat)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("# written by the Go test\n")
	for _, e := range now {
		fmt.Fprintf(&b, "%s  %s\n", e.sum, e.path)
	}
	writeFile(t, repo, "bindings/go/lib/"+plat+"/SOURCES", b.String())
}

func readFile(t *testing.T, dir, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func writeFile(t *testing.T, dir, rel, content string) {
	t.Helper()
	full := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
