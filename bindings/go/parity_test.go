//go:build cgo

package payidem

// Parity with the linked library: every table and default this binding
// holds is checked here against the C library, which takes them from the
// Rust core. A code, an option or a default added to the core fails these
// tests until the binding has it, spelled the same.

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// goCodeConstants reads every exported constant of type Code in errors.go:
// name to value.
func goCodeConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "errors.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal", name.Name)
				}
				value, _ := strconv.Unquote(lit.Value)
				consts[name.Name] = value
			}
		}
	}
	if len(consts) == 0 {
		t.Fatal("no Code constant in errors.go")
	}
	return consts
}

// Every code the linked library knows (1..payidem_result_max_error_code)
// has a Go code spelled as the library names it, a sentinel and an
// exported constant; Go has no code the library lacks.
func TestErrorCodesMatchTheLibrary(t *testing.T) {
	max := libraryMaxErrorCode()
	if max == 0 {
		t.Fatal("the library reports no error code")
	}
	constants := goCodeConstants(t)
	exported := map[string]bool{}
	for _, v := range constants {
		exported[v] = true
	}
	library := map[string]bool{}
	for n := uint32(1); n <= max; n++ {
		name := ResultName(n)
		if name == "" {
			t.Errorf("the library counts %d codes but names none for %d", max, n)
			continue
		}
		library[name] = true
		info, ok := codeByResult[n]
		if !ok {
			t.Errorf("Go lacks code %d %q of the library", n, name)
			continue
		}
		if string(info.code) != name {
			t.Errorf("code %d: the library spells it %q, Go %q", n, name, info.code)
		}
		if !exported[name] {
			t.Errorf("code %d %q has no exported Code constant", n, name)
		}
		if info.sentinel == nil || !errors.Is(errorOfResult(n), info.sentinel) {
			t.Errorf("code %d %q: its error does not match its sentinel", n, name)
		}
		matched := 0
		for _, s := range allSentinels {
			if errors.Is(errorOfResult(n), s) {
				matched++
			}
		}
		if matched != 1 {
			t.Errorf("code %d %q matches %d sentinels of allSentinels", n, name, matched)
		}
	}
	// The other way round: nothing in Go the library does not know.
	for n, info := range codeByResult {
		if n >= 1 && n < 100 && n > max {
			t.Errorf("Go maps code %d %q, beyond the library's last code %d", n, info.code, max)
		}
		if got := ResultName(n); got != string(info.code) {
			t.Errorf("Go maps %d to %q, the library names it %q", n, info.code, got)
		}
	}
	for name, value := range constants {
		found := library[value]
		for n, info := range codeByResult {
			found = found || n >= 100 && string(info.code) == value
		}
		if !found {
			t.Errorf("%s = %q is no code of the library", name, value)
		}
	}
	sentinels := map[error]bool{}
	for _, info := range codeByResult {
		sentinels[info.sentinel] = true
	}
	if len(allSentinels) != len(sentinels) {
		t.Errorf("allSentinels lists %d sentinels, codeByResult uses %d", len(allSentinels), len(sentinels))
	}
}

func TestJournalMemoryIsTheLibrarysName(t *testing.T) {
	d, err := readLibraryDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if d.MemoryJournal == "" || JournalMemory != d.MemoryJournal {
		t.Errorf("JournalMemory = %q, the library's memory journal is %q", JournalMemory, d.MemoryJournal)
	}
}

// libraryOptionKeys is every option key of the library's defaults, nested
// ones as "retry.base_ms".
func libraryOptionKeys(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Options map[string]any `json:"options"`
	}
	raw := libraryDefaultsJSON()
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var keys []string
	for k, v := range doc.Options {
		if nested, ok := v.(map[string]any); ok {
			for sub := range nested {
				keys = append(keys, k+"."+sub)
			}
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) < 10 {
		t.Fatalf("only %d options in the library's defaults: %s", len(keys), raw)
	}
	return keys
}

// goOptionKeys is every key the options struct can send, nested ones as
// "retry.base_ms".
func goOptionKeys() map[string]bool {
	keys := map[string]bool{}
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, prefix string) {
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, prefix+name+".")
				continue
			}
			keys[prefix+name] = true
		}
	}
	walk(reflect.TypeOf(options{}), "")
	return keys
}

// Every option of the library has a Config field that sets it, and Config
// sets no option the library does not have.
func TestEveryLibraryOptionHasAConfigField(t *testing.T) {
	library := map[string]bool{"base_url": true, "key_id": true}
	for _, k := range libraryOptionKeys(t) {
		library[k] = true
	}
	goKeys := goOptionKeys()
	for k := range library {
		if !goKeys[k] {
			t.Errorf("the library's option %q is not in Go's options", k)
		}
		if _, ok := goFieldOfOption[k]; !ok {
			t.Errorf("the library's option %q has no Config field in goFieldOfOption", k)
		}
	}
	for k := range goKeys {
		if !library[k] {
			t.Errorf("Go sends option %q, which the library does not have", k)
		}
	}
	for k := range goFieldOfOption {
		if !library[k] && k != "secret" {
			t.Errorf("goFieldOfOption names option %q, which the library does not have", k)
		}
	}
}

// DefaultConfig, rendered as options, is exactly the library's defaults.
func TestDefaultConfigIsTheLibrarysDefaults(t *testing.T) {
	d, err := readLibraryDefaults()
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if cfg.BaseURL != "" || cfg.KeyID != "" || cfg.Secret != nil || cfg.OnAttempt != nil {
		t.Errorf("DefaultConfig sets a field that has no default: %v", cfg)
	}
	if cfg.ConnectTimeout <= 0 || cfg.RequestTimeout <= 0 || cfg.MaxAttempts < 1 || cfg.Deadline <= 0 ||
		cfg.KeyRetention <= 0 || cfg.SettledRetention <= 0 || cfg.RetryBudget == nil || cfg.RetryBudget.Capacity == 0 {
		t.Errorf("DefaultConfig misses a default: %v", cfg)
	}
	cfg.BaseURL, cfg.KeyID = "https://api.example.com", "k"
	raw, err := cfg.optionsJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got options
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := d.Options
	want.BaseURL, want.KeyID = cfg.BaseURL, cfg.KeyID
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig sends %s; the library's defaults are %s", raw, libraryDefaultsJSON())
	}
	// Given explicitly, every default makes a client.
	cfg.Secret = []byte(mockSecret)
	cfg.JournalPath = JournalMemory
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatalf("NewClient(DefaultConfig()): %v", err)
	}
	c.Close()
}

// configDocDefault is one "  - Field, Field: value" line of Config's doc.
var configDocDefault = regexp.MustCompile(`^\s+- ([A-Za-z, ]+): (.+)$`)

// The defaults Config's doc lists are the library's, and it lists every
// field that has one.
func TestConfigDocListsTheLibrarysDefaults(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if gd, ok := n.(*ast.GenDecl); ok && gd.Tok == token.TYPE {
			for _, spec := range gd.Specs {
				if ts := spec.(*ast.TypeSpec); ts.Name.Name == "Config" && gd.Doc != nil {
					doc = gd.Doc.Text()
				}
			}
		}
		return true
	})
	if doc == "" {
		t.Fatal("no doc comment on Config")
	}
	defaults := reflect.ValueOf(DefaultConfig())
	listed := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		m := configDocDefault.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		value := m[2]
		first := strings.Fields(value)[0]
		for _, name := range strings.Split(m[1], ", ") {
			listed[name] = true
			field := defaults.FieldByName(name)
			if !field.IsValid() {
				t.Errorf("the doc lists %q, which is no Config field", name)
				continue
			}
			ok := false
			switch v := field.Interface().(type) {
			case time.Duration:
				d, err := time.ParseDuration(first)
				ok = err == nil && d == v
			case int:
				n, err := strconv.Atoi(first)
				ok = err == nil && n == v
			case bool:
				b, err := strconv.ParseBool(first)
				ok = err == nil && b == v
			case string:
				ok = first == strconv.Quote(v)
			case *RetryBudget:
				ok = v != nil && value == fmt.Sprintf("%+v", *v)
			case []byte:
				ok = first == "nil" && v == nil
			default:
				t.Errorf("%s: no rule to read a %T", name, v)
			}
			if !ok {
				t.Errorf("the doc says %s: %s; the library's default is %v", name, value, field.Interface())
			}
		}
	}
	for option, field := range goFieldOfOption {
		field = strings.Split(field, ".")[0]
		if option == "base_url" || option == "key_id" || option == "secret" {
			continue
		}
		if !listed[field] {
			t.Errorf("Config's doc does not list the default of %s (option %s)", field, option)
		}
	}
}
