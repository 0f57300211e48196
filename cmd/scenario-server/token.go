package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/scenario-server/scenario-server/api"
	"github.com/scenario-server/scenario-server/auth"
	"github.com/scenario-server/scenario-server/store"
	"github.com/scenario-server/scenario-server/store/sqlite"
)

const tokenUsage = `Usage:
  scenario-server token create --name NAME --role ROLE [--expires DURATION]
  scenario-server token list
  scenario-server token revoke ID

create prints the new token's secret on stdout, once: the store keeps only its SHA-256.
Roles: viewer, editor, deployer, admin. The store is the server's: PostgreSQL when
` + envDatabaseURL + ` is set, else SQLite in --data-dir (env ` + envDataDir + `); a running server
sees the change at once.
`

// tokenCommand runs "scenario-server token ...": it manages API tokens in the server's store.
func tokenCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return fmt.Errorf("%w: token needs create, list or revoke", errUsage)
	}
	sub, rest := args[0], args[1:]
	if sub == "-h" || sub == "-help" || sub == "--help" || sub == "help" {
		fmt.Fprint(stdout, tokenUsage)
		return flag.ErrHelp // exit 0, as the other commands' -h
	}
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, tokenUsage); fs.PrintDefaults() }
	dataDir := fs.String("data-dir", envOr(getenv, envDataDir, defaultDataDir), "the SQLite store's `dir` (env "+envDataDir+"); unused when "+envDatabaseURL+" is set")
	var name, roleName string
	var expires time.Duration
	switch sub {
	case "create":
		fs.StringVar(&name, "name", "", "who or what uses the token (`name`, at most 100 bytes of UTF-8); the history shows it")
		fs.StringVar(&roleName, "role", "", "the `role` the token grants: viewer, editor, deployer or admin")
		fs.Func("expires", "the token is refused after this `duration` (720h: 30 days; from 1m to 87600h); 0 or absent: never", func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil {
				return errors.New("want a duration in hours or minutes, such as 720h for 30 days (from 1m to 87600h), or 0 for never")
			}
			expires = d
			return nil
		})
	case "list", "revoke":
	default:
		fmt.Fprint(stderr, tokenUsage)
		return fmt.Errorf("%w: unknown token command %q", errUsage, sub)
	}
	// Flags may stand before or after the arguments (token revoke 3 --data-dir d).
	var params []string
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		params, rest = append(params, fs.Arg(0)), fs.Args()[1:]
	}
	var revokeID int64
	switch sub {
	case "create":
		if len(params) > 0 {
			return fmt.Errorf("%w: token create takes no arguments, got %q", errUsage, params)
		}
		if name == "" || len(name) > 100 {
			return fmt.Errorf("%w: --name is required, at most 100 bytes of UTF-8", errUsage)
		}
		if expires < 0 || (expires > 0 && expires < api.MinTokenLifetime) || expires > api.MaxTokenLifetime {
			return fmt.Errorf("%w: --expires must be 0 (never) or from 1m to 87600h", errUsage)
		}
	case "list":
		if len(params) > 0 {
			return fmt.Errorf("%w: token list takes no arguments, got %q", errUsage, params)
		}
	case "revoke":
		var err error
		if len(params) != 1 {
			return fmt.Errorf("%w: token revoke takes one token ID", errUsage)
		}
		if revokeID, err = strconv.ParseInt(params[0], 10, 64); err != nil || revokeID < 1 {
			return fmt.Errorf("%w: %q is not a token ID (token list shows them)", errUsage, params[0])
		}
	}
	role, err := auth.ParseRole(roleName)
	if sub == "create" && err != nil {
		return fmt.Errorf("%w: --role: %v", errUsage, err)
	}

	// Which store, said on stderr: a token in another store than the server's is refused
	// with nothing to say why.
	where := "PostgreSQL (" + envDatabaseURL + ")"
	if getenv(envDatabaseURL) == "" {
		db := filepath.Join(*dataDir, sqlite.FileName)
		where = "SQLite " + db
		if _, err := os.Stat(*dataDir); sub == "create" && errors.Is(err, iofs.ErrNotExist) {
			// A mistyped --data-dir made a store there, and a token the server never knew
			// (new-user round 153): a new store is made only in a directory that is there.
			return fmt.Errorf("no data directory %s: give the server's --data-dir (env %s), or %s for PostgreSQL; to make a token before the server's first start, create the directory first (mkdir -p %s)", *dataDir, envDataDir, envDatabaseURL, *dataDir)
		}
		if _, err := os.Stat(db); errors.Is(err, iofs.ErrNotExist) {
			if sub != "create" {
				// Nothing to list or revoke in a store that is not there: the data directory
				// is another than the server's (before, an empty store was made there, exit 0).
				return fmt.Errorf("no store at %s: give the server's --data-dir (env %s), or %s for PostgreSQL", db, envDataDir, envDatabaseURL)
			}
			where += " (a new, empty store: give the server's --data-dir if it is elsewhere)"
		}
	}
	st, _, err := openStore(ctx, serveConfig{DataDir: *dataDir, DatabaseURL: getenv(envDatabaseURL)})
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stderr, "store: %s\n", where)
	switch sub {
	case "create":
		t, secret, err := api.CreateToken(ctx, st, name, role, expires)
		if err != nil {
			return fmt.Errorf("creating the token: %w", err)
		}
		fmt.Fprintf(stderr, "token %d (%s, %s%s) created; its secret, shown this once:\n", t.ID, t.Name, t.Role, expiresText(t))
		fmt.Fprintln(stdout, secret)
		return auditCLI(ctx, st, "token.create", t)
	case "list":
		list, err := st.ListTokens(ctx)
		if err != nil {
			return fmt.Errorf("listing the tokens: %w", err)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tROLE\tCREATED\tEXPIRES\tREVOKED")
		for _, t := range list {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, t.CreatedAt.Format(time.RFC3339),
				timeOrDash(t.ExpiresAt), timeOrDash(t.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		t, err := st.RevokeToken(ctx, revokeID)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("there is no token %d", revokeID)
		}
		if err != nil {
			return fmt.Errorf("revoking token %d: %w", revokeID, err)
		}
		fmt.Fprintf(stdout, "token %d (%s) revoked at %s\n", t.ID, t.Name, t.RevokedAt.Format(time.RFC3339))
		return auditCLI(ctx, st, "token.revoke", t)
	}
	return nil
}

// auditCLI writes the audit entry of a token command: the same action and target as the API's
// (api.TokenAuditTarget), by the operating system's user who ran it, subject "cli:<user>",
// from the address "local". The token is made or revoked already when this fails: the error
// says so.
func auditCLI(ctx context.Context, st store.Store, action string, t store.Token) error {
	who := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	e := store.AuditEntry{Subject: auth.CLISubjectPrefix + who, Name: who + auth.CLINameSuffix, Address: "local", Action: action,
		Target: api.TokenAuditTarget(t), Outcome: "ok"}
	if _, err := st.AppendAudit(ctx, e); err != nil {
		return fmt.Errorf("%s done, but its audit entry could not be written: %w", action, err)
	}
	return nil
}

func expiresText(t store.Token) string {
	if t.ExpiresAt.IsZero() {
		return ", never expires"
	}
	return ", expires " + t.ExpiresAt.Format(time.RFC3339)
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
