//go:build cgo

package payidem

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// startPostgres starts a throwaway PostgreSQL server (initdb in a temp
// directory, unix socket only; ffi/tests-c/pg_server.sh, which runs it as
// the postgres user under root) for the test; its URL. A server that
// cannot start fails the test: it is never skipped.
func startPostgres(t *testing.T) string {
	t.Helper()
	script := repositoryFile(t, "ffi/tests-c/pg_server.sh")
	dir, err := os.MkdirTemp("/tmp", "payidem-go-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(script, "start", dir).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		_ = os.RemoveAll(dir)
		t.Fatalf("cannot start PostgreSQL (make pg-deps installs it): %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		_ = exec.Command(script, "stop", dir).Run()
		_ = os.RemoveAll(dir)
	})
	return strings.TrimSpace(string(out))
}

// psql runs script on the database at url with psql, each vars entry as a
// psql variable; it fails the test on any SQL error.
func psql(t *testing.T, url, script string, vars map[string]string) {
	t.Helper()
	args := []string{"-X", "-q", "-v", "ON_ERROR_STOP=1"}
	for k, v := range vars {
		args = append(args, "-v", k+"="+v)
	}
	args = append(args, "-d", url, "-f", "-")
	cmd := exec.Command("psql", args...)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("psql: %v\n%s\nscript:\n%s", err, out, script)
	}
}

// runOutbox runs OutboxInsert's statement as it is ($n placeholders) in one
// transaction with the application's own row: PREPARE with the parameter
// types of args (string text, []byte bytea, nil a text NULL), EXECUTE with
// the values as psql variables. commit false rolls it back.
func runOutbox(t *testing.T, url, order, sql string, args []any, commit bool) {
	t.Helper()
	vars := map[string]string{"app_order": order}
	types := make([]string, len(args))
	values := make([]string, len(args))
	for i, a := range args {
		name := fmt.Sprintf("p%d", i+1)
		switch v := a.(type) {
		case string:
			types[i], values[i], vars[name] = "text", ":'"+name+"'", v
		case []byte:
			types[i], values[i], vars[name] = "bytea", "decode(:'"+name+"', 'hex')", hex.EncodeToString(v)
		case nil:
			types[i], values[i] = "text", "NULL"
		default:
			t.Fatalf("argument %d is a %T: not a database/sql value", i+1, a)
		}
	}
	end := "ROLLBACK"
	if commit {
		end = "COMMIT"
	}
	psql(t, url, "CREATE TABLE IF NOT EXISTS app_orders (id text PRIMARY KEY);\n"+
		"BEGIN;\n"+
		"INSERT INTO app_orders VALUES (:'app_order');\n"+
		"PREPARE payidem_outbox ("+strings.Join(types, ", ")+") AS "+sql+";\n"+
		"EXECUTE payidem_outbox ("+strings.Join(values, ", ")+");\n"+
		end+";\n", vars)
}

func TestPostgresJournalOutboxThenTakeOver(t *testing.T) {
	url := startPostgres(t)
	m, c := mockClient(t, func(cfg *Config) {
		cfg.JournalPath = url
	})
	ctx := context.Background()

	// A client on the PostgreSQL journal pays.
	paid := orderID("go-pg-paid")
	if _, err := c.Execute(ctx, payment(paid, 1250)); err != nil {
		t.Fatalf("Execute: %v", err)
	}
	if st, err := c.Status(ctx, paid); err != nil || st.State != StateSucceeded || st.Attempts != 1 {
		t.Fatalf("Status(%s) = %+v, %v; want succeeded after 1 attempt", paid, st, err)
	}

	// Bad input names its field; nothing is produced.
	var bad *InvalidArgumentError
	if _, _, err := c.OutboxInsert(payment("go-pg-x", 1), ParamStyle(7)); !errors.As(err, &bad) || bad.Field != "param_style" {
		t.Errorf("style 7: err = %v, want invalid param_style", err)
	}
	if _, _, err := c.OutboxInsert(payment("go-pg-x", 1), ParamStyle(-1)); !errors.As(err, &bad) || bad.Field != "param_style" {
		t.Errorf("style -1: err = %v, want invalid param_style", err)
	}
	noSlash := payment("go-pg-x", 1)
	noSlash.Path = "v1/payments"
	if _, _, err := c.OutboxInsert(noSlash, ParamsDollar); !errors.As(err, &bad) || bad.Field != "path" {
		t.Errorf("path without /: err = %v, want invalid path", err)
	}
	if _, err := c.TakeOver(ctx, -1); !errors.As(err, &bad) || bad.Field != "limit" {
		t.Errorf("TakeOver(-1): err = %v, want invalid limit", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.TakeOver(cancelled, 10); !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Errorf("TakeOver(cancelled ctx): err = %v, want ErrCancelled", err)
	}

	// The outbox statement, in the application's transaction.
	order := orderID("go-pg-outbox")
	op := payment(order, 4200)
	op.StatusPath = ""
	sql, args, err := c.OutboxInsert(op, ParamsDollar)
	if err != nil {
		t.Fatalf("OutboxInsert: %v", err)
	}
	if !strings.Contains(sql, "$7") || strings.Contains(sql, "%s") || len(args) != 7 {
		t.Fatalf("OutboxInsert = %q, %d args; want $1..$7 and 7 args", sql, len(args))
	}
	if args[0] != order || args[1] != "create-"+order || args[2] != "POST" || args[3] != "/v1/payments" {
		t.Errorf("args[0:4] = %v", args[0:4])
	}
	if b, ok := args[4].([]byte); !ok || !bytes.Equal(b, op.Body) {
		t.Errorf("args[4] = %#v, want the body as []byte", args[4])
	}
	if args[6] != nil {
		t.Errorf("args[6] = %#v, want nil for no status path", args[6])
	}
	pct, pctArgs, err := c.OutboxInsert(op, ParamsPercentS)
	if err != nil || !strings.Contains(pct, "%s") || strings.Contains(pct, "$1") || fmt.Sprint(pctArgs) != fmt.Sprint(args) {
		t.Errorf("ParamsPercentS: %q %v %v; want %%s placeholders and the same args", pct, pctArgs, err)
	}

	// A rolled-back transaction records nothing.
	rolledBack := orderID("go-pg-rollback")
	rbSQL, rbArgs, err := c.OutboxInsert(payment(rolledBack, 10), ParamsDollar)
	if err != nil {
		t.Fatalf("OutboxInsert: %v", err)
	}
	runOutbox(t, url, rolledBack, rbSQL, rbArgs, false)
	runOutbox(t, url, order, sql, args, true)

	if st, err := c.Status(ctx, order); err != nil || st.State == StateNotFound || st.State == StateSucceeded || st.Attempts != 0 {
		t.Fatalf("Status(%s) before takeover = %+v, %v; want journaled, unsent", order, st, err)
	}
	if st, err := c.Status(ctx, rolledBack); err != nil || st.State != StateNotFound {
		t.Fatalf("Status(%s) = %+v, %v; want not found (rolled back)", rolledBack, st, err)
	}
	if n := m.stats(t).Orders[order].PaymentsCreated; n != 0 {
		t.Fatalf("the mock has %d payments for %s before the takeover", n, order)
	}

	taken, err := c.TakeOver(ctx, 10)
	if err != nil || len(taken) != 1 || taken[0] != order {
		t.Fatalf("TakeOver = %v, %v; want [%s]", taken, err, order)
	}
	if st, err := c.Status(ctx, order); err != nil || st.State != StateSucceeded || st.Attempts != 1 {
		t.Fatalf("Status(%s) after takeover = %+v, %v; want succeeded after 1 attempt", order, st, err)
	}
	// Nothing is left to take: sent once, under its key.
	if again, err := c.TakeOver(ctx, 10); err != nil || len(again) != 0 {
		t.Fatalf("second TakeOver = %v, %v; want nothing", again, err)
	}
	m.assertOnePaymentEach(t, []string{paid, order})
	if keys := m.stats(t).Orders[order].IdempotencyKeys; len(keys) != 1 || keys[0] != "create-"+order {
		t.Errorf("keys of %s = %v, want [create-%s]", order, keys, order)
	}
}
