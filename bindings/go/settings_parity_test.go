//go:build cgo

package payidem

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// settingsVectors mirrors core/tests/vectors/settings-v1.json.
type settingsVectors struct {
	Client settingsPart `json:"client"`
	Start  settingsPart `json:"start"`
}

type settingsPart struct {
	Base  map[string]any `json:"base"`
	Cases []settingsCase `json:"cases"`
}

type settingsCase struct {
	Setting string         `json:"setting"`
	Case    string         `json:"case"`
	Value   any            `json:"value"`
	HasVal  bool           `json:"-"`
	With    map[string]any `json:"with"`
	Expect  struct {
		Value any    `json:"value"`
		Error string `json:"error"`
		Field string `json:"field"`
	} `json:"expect"`
}

func loadSettingsVectors(t *testing.T) settingsVectors {
	t.Helper()
	raw, err := os.ReadFile(repositoryFile(t, "core/tests/vectors/settings-v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v settingsVectors
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	// "value": null is never used; a missing value is absent.
	var marks struct {
		Client struct{ Cases []map[string]json.RawMessage } `json:"client"`
		Start  struct{ Cases []map[string]json.RawMessage } `json:"start"`
	}
	if err := json.Unmarshal(raw, &marks); err != nil {
		t.Fatal(err)
	}
	for i, c := range marks.Client.Cases {
		_, v.Client.Cases[i].HasVal = c["value"]
	}
	for i, c := range marks.Start.Cases {
		_, v.Start.Cases[i].HasVal = c["value"]
	}
	return v
}

// putSetting sets (or, for absent, removes) the setting at a dotted path.
func putSetting(doc map[string]any, path string, value any, present bool) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := doc[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			doc[k] = next
		}
		doc = next
	}
	if present {
		doc[keys[len(keys)-1]] = value
	} else {
		delete(doc, keys[len(keys)-1])
	}
}

func deepCopy(m map[string]any) map[string]any {
	raw, _ := json.Marshal(m)
	var out map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&out)
	return out
}

// rawDocument is the case's JSON document, as every language builds it.
func rawDocument(base map[string]any, c settingsCase) []byte {
	doc := deepCopy(base)
	putSetting(doc, c.Setting, nil, false)
	for k, v := range c.With {
		putSetting(doc, k, v, true)
	}
	if c.HasVal {
		putSetting(doc, c.Setting, c.Value, true)
	}
	raw, _ := json.Marshal(doc)
	return raw
}

// integer is v as an int64 when it is a JSON integer that fits.
func integer(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// goSetter gives a setting's value to a Config field; false when Go's type
// cannot hold it (see Config: a Go zero is absent, a string is no number).
type goSetter func(cfg *Config, v any) bool

// zeroSetter gives an explicit 0 to the Config field name through
// Config.ZeroSettings, and any other value to set.
func zeroSetter(name string, set goSetter) goSetter {
	return func(cfg *Config, v any) bool {
		if n, ok := integer(v); ok && n == 0 {
			cfg.ZeroSettings = append(cfg.ZeroSettings, name)
			return true
		}
		return set(cfg, v)
	}
}

func durationSetter(field func(*Config) *time.Duration, unit time.Duration) goSetter {
	return func(cfg *Config, v any) bool {
		n, ok := integer(v)
		if !ok || n == 0 || n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
			return false
		}
		*field(cfg) = time.Duration(n) * unit
		return true
	}
}

func budgetSetter(field func(*RetryBudget) *uint32) goSetter {
	return func(cfg *Config, v any) bool {
		n, ok := integer(v)
		if !ok || n <= 0 || n > math.MaxUint32 {
			return false
		}
		if cfg.RetryBudget == nil {
			cfg.RetryBudget = &RetryBudget{}
		}
		*field(cfg.RetryBudget) = uint32(n)
		return true
	}
}

func textSetter(field func(*Config) *string) goSetter {
	return func(cfg *Config, v any) bool {
		s, ok := v.(string)
		if ok {
			*field(cfg) = s
		}
		return ok
	}
}

func flagSetter(field func(*Config) *bool) goSetter {
	return func(cfg *Config, v any) bool {
		b, ok := v.(bool)
		if ok {
			*field(cfg) = b
		}
		return ok
	}
}

var clientSetters = map[string]goSetter{
	"base_url":     textSetter(func(c *Config) *string { return &c.BaseURL }),
	"key_id":       textSetter(func(c *Config) *string { return &c.KeyID }),
	"journal_path": textSetter(func(c *Config) *string { return &c.JournalPath }),
	"journal_key_hex": func(cfg *Config, v any) bool {
		s, ok := v.(string)
		if !ok {
			return false
		}
		key, err := hexDecode(s)
		cfg.JournalKey = key
		return err == nil
	},
	"connect_timeout_ms":          durationSetter(func(c *Config) *time.Duration { return &c.ConnectTimeout }, time.Millisecond),
	"request_timeout_ms":          durationSetter(func(c *Config) *time.Duration { return &c.RequestTimeout }, time.Millisecond),
	"retry.base_ms":               durationSetter(func(c *Config) *time.Duration { return &c.BackoffBase }, time.Millisecond),
	"retry.cap_ms":                durationSetter(func(c *Config) *time.Duration { return &c.BackoffCap }, time.Millisecond),
	"retry.deadline_ms":           durationSetter(func(c *Config) *time.Duration { return &c.Deadline }, time.Millisecond),
	"key_retention_s":             durationSetter(func(c *Config) *time.Duration { return &c.KeyRetention }, time.Second),
	"settled_retention_s":         durationSetter(func(c *Config) *time.Duration { return &c.SettledRetention }, time.Second),
	"max_clock_offset_s":          durationSetter(func(c *Config) *time.Duration { return &c.MaxClockOffset }, time.Second),
	"lease_ttl_s":                 durationSetter(func(c *Config) *time.Duration { return &c.LeaseTTL }, time.Second),
	"retry_budget.capacity":       budgetSetter(func(b *RetryBudget) *uint32 { return &b.Capacity }),
	"retry_budget.retry_cost":     budgetSetter(func(b *RetryBudget) *uint32 { return &b.RetryCost }),
	"retry_budget.timeout_cost":   budgetSetter(func(b *RetryBudget) *uint32 { return &b.TimeoutCost }),
	"retry_budget.success_refund": budgetSetter(func(b *RetryBudget) *uint32 { return &b.SuccessRefund }),
	"retry.max_attempts": func(cfg *Config, v any) bool {
		n, ok := integer(v)
		if ok && n != 0 {
			cfg.MaxAttempts = int(n)
		}
		return ok && n != 0
	},
	"allow_insecure_http": flagSetter(func(c *Config) *bool { return &c.AllowInsecureHTTP }),
	"proxy_from_env":      flagSetter(func(c *Config) *bool { return &c.ProxyFromEnv }),
	"proxy":               textSetter(func(c *Config) *string { return &c.Proxy }),
	"ca_bundle":           textSetter(func(c *Config) *string { return &c.CABundle }),
	"client_cert":         textSetter(func(c *Config) *string { return &c.ClientCert }),
	"client_key":          textSetter(func(c *Config) *string { return &c.ClientKey }),
}

func init() {
	for option, set := range clientSetters {
		if field, numeric := goFieldOfOption[option]; numeric && isNumericOption(option) {
			clientSetters[option] = zeroSetter(field, set)
		}
	}
}

// isNumericOption tells whether option takes a number (a duration, a
// count): those are the ones a Go zero leaves absent.
func isNumericOption(option string) bool {
	return strings.HasSuffix(option, "_ms") || strings.HasSuffix(option, "_s") ||
		strings.HasPrefix(option, "retry_budget.") || option == "retry.max_attempts"
}

func hexDecode(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	out := make([]byte, len(s)/2)
	for i := range out {
		var b byte
		for _, c := range []byte(s[2*i : 2*i+2]) {
			switch {
			case c >= '0' && c <= '9':
				b = b<<4 | (c - '0')
			case c >= 'a' && c <= 'f':
				b = b<<4 | (c - 'a' + 10)
			default:
				return nil, errors.New("not hex")
			}
		}
		out[i] = b
	}
	return out, nil
}

// configOf is the case as a Config, or false when a value has no Go form.
func configOf(base map[string]any, c settingsCase) (Config, bool) {
	cfg := Config{BaseURL: base["base_url"].(string), KeyID: base["key_id"].(string), JournalPath: base["journal_path"].(string)}
	if !c.HasVal && (c.Setting == "base_url" || c.Setting == "key_id") {
		return cfg, false // Go always sends them
	}
	if c.Setting == "journal_path" {
		cfg.JournalPath = ""
	}
	return cfg, applyCase(&cfg, c, clientSetters)
}

// applyCase sets the case's "with" settings, then its value, on target by
// setters; false when one of them has no setter or does not fit.
func applyCase[T any, S ~func(*T, any) bool](target *T, c settingsCase, setters map[string]S) bool {
	for k, v := range c.With {
		set, ok := setters[k]
		if !ok || !set(target, v) {
			return false
		}
	}
	if c.HasVal {
		set, ok := setters[c.Setting]
		if !ok || !set(target, c.Value) {
			return false
		}
	}
	return true
}

// optionOfField is the option a Config field sets (goFieldOfOption
// reversed).
func optionOfField(field string) string {
	for option, f := range goFieldOfOption {
		if f == field {
			return option
		}
	}
	return field
}

// typedCase is a case stated with Go's types: doc renders the document
// the Go API passes; check compares the Go API's own answer with the
// library's error (nil when the library took the case).
type typedCase struct {
	doc   func() ([]byte, error)
	check func(err error)
}

// runSettingsCases checks every case of part: through Go's types by typed
// when they can state it (ok), else by the JSON document every language
// passes; it returns how many went through Go's types.
func runSettingsCases(t *testing.T, part settingsPart, start bool, typed func(settingsCase) (typedCase, bool)) int {
	t.Helper()
	n := 0
	for _, c := range part.Cases {
		var resolved string
		var err error
		if tc, ok := typed(c); ok {
			n++
			var raw []byte
			if raw, err = tc.doc(); err == nil {
				resolved, err = resolveSettings(raw, start)
			}
			err = renameOptionField(err)
			tc.check(err)
		} else {
			resolved, err = resolveSettings(rawDocument(part.Base, c), start)
		}
		checkSettingsCase(t, c, resolved, err)
	}
	return n
}

func checkSettingsCase(t *testing.T, c settingsCase, resolved string, err error) {
	t.Helper()
	if c.Expect.Error != "" {
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) {
			t.Errorf("%s/%s: got %v, %s; want %s naming %s", c.Setting, c.Case, err, resolved, c.Expect.Error, c.Expect.Field)
			return
		}
		if string(ia.Err.Code) != c.Expect.Error || optionOfField(ia.Field) != c.Expect.Field {
			t.Errorf("%s/%s: got %s naming %s; want %s naming %s", c.Setting, c.Case, ia.Err.Code, ia.Field, c.Expect.Error, c.Expect.Field)
		}
		return
	}
	if err != nil {
		t.Errorf("%s/%s: got %v; want %v", c.Setting, c.Case, err, c.Expect.Value)
		return
	}
	dec := json.NewDecoder(strings.NewReader(resolved))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(c.Setting, ".") {
		m, _ := doc.(map[string]any)
		doc = m[k]
	}
	if !reflect.DeepEqual(doc, c.Expect.Value) {
		t.Errorf("%s/%s: got %v; want %v", c.Setting, c.Case, doc, c.Expect.Value)
	}
}

// Every client setting of the parity vectors through Go: by a Config when
// Go's types can hold the case (NewClient's path: optionsJSON, then the
// library; an explicit 0 through Config.ZeroSettings), else by the same
// JSON every language passes (a wrong type, an unknown key: Config cannot
// say them).
func TestSettingsParityClient(t *testing.T) {
	v := loadSettingsVectors(t)
	typed := runSettingsCases(t, v.Client, false, func(c settingsCase) (typedCase, bool) {
		cfg, ok := configOf(v.Client.Base, c)
		return typedCase{doc: cfg.optionsJSON, check: func(err error) {
			if c.Expect.Error == "" {
				return
			}
			if checkErr := cfg.Check(); checkErr == nil || checkErr.Error() != err.Error() {
				t.Errorf("%s/%s: Check gives %v, the library %v", c.Setting, c.Case, checkErr, err)
			}
		}}, ok
	})
	if len(v.Client.Cases) < 100 || typed < len(v.Client.Cases)/2 {
		t.Fatalf("%d cases, %d through Config", len(v.Client.Cases), typed)
	}
	t.Logf("%d client cases, %d through Config", len(v.Client.Cases), typed)
}

// machineSetter gives a start setting's value to a MachineStart field;
// false when Go's type cannot hold it.
type machineSetter func(s *MachineStart, v any) bool

func machineDuration(field func(*MachineSetup) *time.Duration, unit time.Duration, zeroIsAbsent bool) machineSetter {
	return func(s *MachineStart, v any) bool {
		n, ok := integer(v)
		if !ok || (zeroIsAbsent && n == 0) || n > math.MaxInt64/int64(unit) || n < math.MinInt64/int64(unit) {
			return false
		}
		*field(&s.Setup) = time.Duration(n) * unit
		return true
	}
}

// machineZero gives an explicit 0 to the MachineSetup field name through
// MachineSetup.ZeroSettings, and any other value to set.
func machineZero(name string, set machineSetter) machineSetter {
	return func(s *MachineStart, v any) bool {
		if n, ok := integer(v); ok && n == 0 {
			s.Setup.ZeroSettings = append(s.Setup.ZeroSettings, name)
			return true
		}
		return set(s, v)
	}
}

func machineBudgetSetter(field func(*RetryBudget) *uint32) machineSetter {
	return func(s *MachineStart, v any) bool {
		n, ok := integer(v)
		if !ok || n < 0 || n > math.MaxUint32 {
			return false
		}
		if s.Setup.RetryBudget == nil {
			s.Setup.RetryBudget = &RetryBudget{}
		}
		*field(s.Setup.RetryBudget) = uint32(n)
		return true
	}
}

func machineTime(field func(*MachineStart) *time.Time) machineSetter {
	return func(s *MachineStart, v any) bool {
		n, ok := integer(v)
		if ok {
			*field(s) = time.Unix(n, 0)
		}
		return ok
	}
}

var startSetters = map[string]machineSetter{
	"now":                 machineTime(func(s *MachineStart) *time.Time { return &s.Now }),
	"progress.created_at": machineTime(func(s *MachineStart) *time.Time { return &s.CreatedAt }),
	"progress.attempts": func(s *MachineStart, v any) bool {
		n, ok := integer(v)
		s.Attempts = int(n)
		return ok
	},
	"setup.max_attempts": machineZero("MaxAttempts", func(s *MachineStart, v any) bool {
		n, ok := integer(v)
		s.Setup.MaxAttempts = int(n)
		return ok && n != 0
	}),
	"setup.backoff_base_ms":       machineZero("BackoffBase", machineDuration(func(m *MachineSetup) *time.Duration { return &m.BackoffBase }, time.Millisecond, true)),
	"setup.backoff_cap_ms":        machineZero("BackoffCap", machineDuration(func(m *MachineSetup) *time.Duration { return &m.BackoffCap }, time.Millisecond, true)),
	"setup.deadline_ms":           machineZero("Deadline", machineDuration(func(m *MachineSetup) *time.Duration { return &m.Deadline }, time.Millisecond, true)),
	"setup.key_retention_secs":    machineZero("KeyRetention", machineDuration(func(m *MachineSetup) *time.Duration { return &m.KeyRetention }, time.Second, true)),
	"setup.max_clock_offset_secs": machineZero("MaxClockOffset", machineDuration(func(m *MachineSetup) *time.Duration { return &m.MaxClockOffset }, time.Second, true)),
	"setup.clock_offset":          machineDuration(func(m *MachineSetup) *time.Duration { return &m.ClockOffset }, time.Second, false),
	"setup.clock_trusted": func(s *MachineStart, v any) bool {
		b, ok := v.(bool)
		s.Setup.ClockUntrusted = !b
		return ok
	},
	"setup.retry_budget.capacity":       machineBudgetSetter(func(b *RetryBudget) *uint32 { return &b.Capacity }),
	"setup.retry_budget.retry_cost":     machineBudgetSetter(func(b *RetryBudget) *uint32 { return &b.RetryCost }),
	"setup.retry_budget.timeout_cost":   machineBudgetSetter(func(b *RetryBudget) *uint32 { return &b.TimeoutCost }),
	"setup.retry_budget.success_refund": machineBudgetSetter(func(b *RetryBudget) *uint32 { return &b.SuccessRefund }),
}

// startOf is the case as a MachineStart, or false when a value has no Go
// form. Go always sends now, created_at, attempts, the clock settings and
// every field of a budget, so their absent cases (and a budget with a field
// left out) go by JSON.
func startOf(base map[string]any, c settingsCase) (MachineStart, bool) {
	op := base["operation"].(map[string]any)
	now, _ := integer(base["now"])
	s := MachineStart{
		Operation: Operation{OrderID: op["order_id"].(string), Method: op["method"].(string), Path: op["path"].(string), Body: []byte(op["body"].(string))},
		Now:       time.Unix(now, 0),
		CreatedAt: time.Unix(now, 0),
	}
	if !c.HasVal && (c.Setting == "now" || strings.HasPrefix(c.Setting, "setup.retry_budget.")) {
		return s, false
	}
	for k := range c.With {
		if strings.HasPrefix(k, "setup.retry_budget.") {
			return s, false // the other budget fields would be sent as 0
		}
	}
	return s, applyCase(&s, c, startSetters)
}

// Every machine-start setting of the parity vectors through Go: by a
// MachineStart when Go's types can hold the case (NewMachine's path), else
// by the same JSON every language passes.
func TestSettingsParityStart(t *testing.T) {
	v := loadSettingsVectors(t)
	typed := runSettingsCases(t, v.Start, true, func(c settingsCase) (typedCase, bool) {
		s, ok := startOf(v.Start.Base, c)
		return typedCase{doc: s.json, check: func(err error) {
			m, machineErr := NewMachine(s)
			if (machineErr == nil) != (err == nil) {
				t.Errorf("%s/%s: NewMachine gives %v, the library %v", c.Setting, c.Case, machineErr, err)
			}
			if m != nil {
				m.Close()
			}
		}}, ok
	})
	if len(v.Start.Cases) < 80 || typed < len(v.Start.Cases)/3 {
		t.Fatalf("%d cases, %d through MachineStart", len(v.Start.Cases), typed)
	}
	t.Logf("%d start cases, %d through MachineStart", len(v.Start.Cases), typed)
}

// resolvedDocument is the library's resolved settings of the document
// render gives (a start document when start), by object: {"retry":
// {"base_ms": 0, ...}, ...}; top-level values that are no object are left out.
func resolvedDocument(t *testing.T, render func() ([]byte, error), start bool) map[string]map[string]any {
	t.Helper()
	raw, err := render()
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := resolveSettings(raw, start)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(resolved), &doc); err != nil {
		t.Fatal(err)
	}
	objects := map[string]map[string]any{}
	for key, value := range doc {
		if object, ok := value.(map[string]any); ok {
			objects[key] = object
		}
	}
	return objects
}

// Config.ZeroSettings sends an explicit 0, which the library judges: a
// zero BackoffBase retries without waiting, a zero ConnectTimeout is
// refused by name, an unknown name is refused as ZeroSettings.
func TestConfigZeroSettings(t *testing.T) {
	base := Config{BaseURL: "https://pay.example", KeyID: "key_test_1", JournalPath: JournalMemory}
	cfg := base
	cfg.ZeroSettings = []string{"BackoffBase", "RetryBudget.RetryCost"}
	resolved := resolvedDocument(t, cfg.optionsJSON, false)
	if resolved["retry"]["base_ms"] != 0.0 || resolved["retry_budget"]["retry_cost"] != 0.0 {
		t.Fatalf("explicit zeros not taken: %v", resolved)
	}
	cfg.BackoffBase = 2 * time.Second // a value that is set wins
	if raw, _ := cfg.optionsJSON(); !strings.Contains(string(raw), `"base_ms":2000`) {
		t.Fatalf("BackoffBase lost: %s", raw)
	}
	for name, field := range map[string]string{"ConnectTimeout": "ConnectTimeout", "Nonsense": "ZeroSettings"} {
		cfg := base
		cfg.ZeroSettings = []string{name}
		var ia *InvalidArgumentError
		if err := cfg.Check(); !errors.As(err, &ia) || ia.Field != field {
			t.Errorf("ZeroSettings %s: %v, want an invalid %s", name, err, field)
		}
	}
}

// MachineSetup.ZeroSettings sends an explicit 0 in the start document,
// which the library judges: a zero BackoffBase or MaxClockOffset is taken,
// a zero MaxAttempts is refused naming setup.max_attempts, a value that is
// set wins, an unknown name is refused as ZeroSettings.
func TestMachineSetupZeroSettings(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	base := MachineStart{
		Operation: Operation{OrderID: "o-zero", Method: "POST", Path: "/payments", Body: []byte(`{}`)},
		Now:       now,
	}
	start := base
	start.Setup.ZeroSettings = []string{"BackoffBase", "MaxClockOffset"}
	start.Setup.BackoffCap = 3 * time.Second
	setup := resolvedDocument(t, start.json, true)["setup"]
	if setup["backoff_base_ms"] != 0.0 || setup["max_clock_offset_secs"] != 0.0 || setup["backoff_cap_ms"] != 3000.0 {
		t.Fatalf("explicit zeros not taken: %v", setup)
	}
	m, err := NewMachine(start)
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	start.Setup.BackoffBase = 2 * time.Second // a value that is set wins
	if raw, _ := start.json(); !strings.Contains(string(raw), `"backoff_base_ms":2000`) {
		t.Fatalf("BackoffBase lost: %s", raw)
	}
	for name, field := range map[string]string{"MaxAttempts": "setup.max_attempts", "Nonsense": "ZeroSettings", "ClockOffset": "ZeroSettings"} {
		start := base
		start.Setup.ZeroSettings = []string{name}
		var ia *InvalidArgumentError
		if _, err := NewMachine(start); !errors.As(err, &ia) || ia.Field != field {
			t.Errorf("ZeroSettings %s: %v, want an invalid %s", name, err, field)
		}
	}
}
