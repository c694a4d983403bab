//! The manual pages: `payidem(1)`, clap's page for the command followed by
//! one section per subcommand with its synopsis, description, arguments and
//! options, so that `man payidem` alone documents every command an operator
//! may run; and one page per subcommand (`payidem-journal(1)`,
//! `payidem-journal-list(1)`, `payidem-sign(1)`, ...), the pages that
//! `payidem(1)` and the group pages name. All are generated from the same
//! clap command tree as `--help`.

use clap::{Arg, Command};

/// Every manual page as (file name, roff): `payidem.1` first (see
/// [`render`]), then one page per visible subcommand at any depth, named
/// `payidem-journal-list.1` for `payidem journal list`.
pub fn pages(cli: Command) -> std::io::Result<Vec<(String, String)>> {
    let mut cli = without_help_subcommand(cli);
    cli.build();
    let mut pages = vec![(format!("{}.1", cli.get_name()), render(cli.clone())?)];
    let mut todo: Vec<Command> = visible_subcommands(&cli).cloned().collect();
    while let Some(cmd) = todo.pop() {
        todo.extend(visible_subcommands(&cmd).cloned());
        let source = format!("payidem {}", cmd.get_version().unwrap_or_default());
        let man = clap_mangen::Man::new(cmd).source(source);
        let mut page = Vec::new();
        man.render(&mut page)?;
        pages.push((man.get_filename(), ascii(&String::from_utf8_lossy(&page))));
    }
    pages[1..].sort();
    Ok(pages)
}

/// `cmd` without clap's `help` subcommands: pages document `--help`, and
/// name no `payidem-help(1)`.
fn without_help_subcommand(mut cmd: Command) -> Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in names {
        cmd = cmd.mut_subcommand(name, without_help_subcommand);
    }
    cmd.disable_help_subcommand(true)
}

/// The whole page, in roff.
pub fn render(cli: Command) -> std::io::Result<String> {
    let mut cli = without_help_subcommand(cli);
    // Settles every argument's defaults (how many values it takes).
    cli.build();
    let mut page = Vec::new();
    clap_mangen::Man::new(cli.clone()).render(&mut page)?;
    let mut page = ascii(&String::from_utf8_lossy(&page));
    page.push_str(".SH \"COMMANDS IN DETAIL\"\n");
    let mut path = vec![cli.get_name().to_owned()];
    for sub in visible_subcommands(&cli) {
        describe(&mut page, &mut path, sub);
    }
    Ok(page)
}

fn visible_subcommands(cmd: &Command) -> impl Iterator<Item = &Command> {
    cmd.get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
}

/// One `.SS` section per command that runs something (a group of
/// subcommands only names them), depth first.
fn describe(page: &mut String, path: &mut Vec<String>, cmd: &Command) {
    path.push(cmd.get_name().to_owned());
    if cmd.has_subcommands() {
        for sub in visible_subcommands(cmd) {
            describe(page, path, sub);
        }
    } else {
        section(page, &path.join(" "), cmd);
    }
    path.pop();
}

fn section(page: &mut String, name: &str, cmd: &Command) {
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    page.push_str(&format!(".SS \"{}\"\n", escape(name)));
    let mut synopsis = format!("\\fB{}\\fR", escape(name));
    for arg in &args {
        synopsis.push(' ');
        synopsis.push_str(&usage(arg));
    }
    page.push_str(&synopsis);
    page.push_str("\n.PP\n");
    if let Some(about) = cmd.get_long_about().or(cmd.get_about()) {
        paragraphs(page, &about.to_string());
    }
    for arg in args {
        page.push_str(".TP\n");
        page.push_str(&usage(arg));
        page.push('\n');
        let mut help = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let values = if takes_value(arg) {
            arg.get_possible_values()
        } else {
            Vec::new()
        };
        let possible: Vec<String> = values
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_owned())
            .collect();
        if !possible.is_empty() {
            help.push_str(&format!(" [one of: {}]", possible.join(", ")));
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        if !defaults.is_empty() {
            help.push_str(&format!(" [default: {}]", defaults.join(", ")));
        }
        if let Some(env) = arg.get_env() {
            help.push_str(&format!(" [env: {}]", env.to_string_lossy()));
        }
        paragraphs(page, help.trim());
    }
}

/// How an argument is written: `\fB--older-than\fR \fIDURATION\fR`, or the
/// value name alone for a positional one; optional ones in brackets.
fn usage(arg: &Arg) -> String {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
    let text = if arg.is_positional() {
        format!("\\fI{}\\fR", escape(&value))
    } else {
        let flag = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("\\fB\\-\\-{}\\fR", escape(long)),
            (None, Some(short)) => format!("\\fB\\-{}\\fR", escape(&short.to_string())),
            (None, None) => String::new(),
        };
        if takes_value(arg) {
            format!("{flag} \\fI{}\\fR", escape(&value))
        } else {
            flag
        }
    };
    if arg.is_required_set() {
        text
    } else {
        format!("[{text}]")
    }
}

fn takes_value(arg: &Arg) -> bool {
    arg.get_num_args().is_some_and(|n| n.takes_values())
}

/// Text as roff paragraphs: blank lines separate them.
fn paragraphs(page: &mut String, text: &str) {
    let mut first = true;
    for para in text.split("\n\n") {
        if !first {
            page.push_str(".IP\n");
        }
        first = false;
        for line in para.lines() {
            page.push_str(&escape_line(line.trim_end()));
            page.push('\n');
        }
    }
}

/// A text line safe for roff: escapes backslashes and dashes, and keeps a
/// leading `.` or `'` from being read as a request.
fn escape_line(line: &str) -> String {
    let escaped = escape(line);
    if escaped.starts_with('.') || escaped.starts_with('\'') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

/// Escapes backslashes and dashes, and writes every character beyond
/// ASCII as groff's `\[uXXXX]` (groff reads its input as Latin-1).
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\e"),
            '-' => out.push_str("\\-"),
            c => push_ascii(&mut out, c),
        }
    }
    out
}

/// Roff that clap_mangen wrote (already escaped) with every character
/// beyond ASCII as groff's `\[uXXXX]`.
fn ascii(roff: &str) -> String {
    let mut out = String::with_capacity(roff.len());
    for c in roff.chars() {
        push_ascii(&mut out, c);
    }
    out
}

fn push_ascii(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c);
    } else {
        out.push_str(&format!("\\[u{:04X}]", u32::from(c)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The page names every other page refers to as `name(1)`.
    fn references(page: &str) -> Vec<String> {
        let text = page.replace("\\-", "-");
        let mut names = Vec::new();
        for (at, _) in text.match_indices("(1)") {
            let start = text[..at]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .map_or(0, |i| i + 1);
            if text[start..at].starts_with("payidem") {
                names.push(format!("{}.1", &text[start..at]));
            }
        }
        names
    }

    #[test]
    fn one_page_per_command_and_every_page_named_in_a_page_exists() {
        let pages = pages(crate::args::Cli::command()).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names[0], "payidem.1");
        for name in [
            "payidem-journal.1",
            "payidem-journal-list.1",
            "payidem-journal-show.1",
            "payidem-journal-resume.1",
            "payidem-journal-reconcile.1",
            "payidem-journal-purge.1",
            "payidem-journal-export.1",
            "payidem-journal-check.1",
            "payidem-sign.1",
            "payidem-verify.1",
        ] {
            assert!(names.contains(&name), "no page {name} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.contains("help")), "{names:?}");
        let mut referenced = 0;
        for (name, page) in &pages {
            assert!(page.contains("\n.TH "), "{name} has no title");
            assert!(page.is_ascii(), "{name}: groff warns beyond ASCII");
            for target in references(page) {
                referenced += 1;
                assert!(
                    names.contains(&target.as_str()),
                    "{name} names {target}, not generated"
                );
            }
            let (_, after) = page.split_once(".SH NAME\n").unwrap();
            let line = after.lines().next().unwrap().replace("\\-", "-");
            let (command, about) = line.split_once(" - ").unwrap();
            assert_eq!(
                format!("{command}.1"),
                *name,
                "NAME names its page's command"
            );
            assert!(
                !about.to_lowercase().starts_with("payidem"),
                "the NAME line repeats the command: {line}"
            );
        }
        assert!(
            referenced >= 10,
            "payidem(1) and payidem-journal(1) name the subcommands' pages"
        );
        let list = &pages
            .iter()
            .find(|(n, _)| n == "payidem-journal-list.1")
            .unwrap()
            .1;
        assert!(
            list.contains("payidem journal list"),
            "the synopsis is the full command"
        );
    }

    #[test]
    fn every_command_that_runs_something_has_a_section_with_its_options() {
        let page = render(crate::args::Cli::command()).unwrap();
        for name in [
            "payidem journal list",
            "payidem journal show",
            "payidem journal resume",
            "payidem journal reconcile",
            "payidem journal purge",
            "payidem journal export",
            "payidem journal check",
            "payidem sign",
            "payidem verify",
        ] {
            assert!(
                page.contains(&format!(".SS \"{}\"", escape(name))),
                "no section for {name}"
            );
        }
        for flag in [
            "older\\-than",
            "reference",
            "settled\\-older\\-than",
            "dry\\-run",
        ] {
            assert!(
                page.contains(&format!("\\fB\\-\\-{flag}\\fR")),
                "--{flag} is not documented"
            );
        }
        assert!(
            page.is_ascii(),
            "groff warns on characters beyond ASCII: {:?}",
            page.chars().find(|c| !c.is_ascii())
        );
        assert!(
            page.contains("postgres://\\[u2026]"),
            "an ellipsis is escaped"
        );
        let (_, detail) = page.split_once(".SH \"COMMANDS IN DETAIL\"").unwrap();
        for line in detail.lines().filter(|l| !l.is_empty()) {
            let request = line.starts_with('.') || line.starts_with('\'');
            assert!(
                !request
                    || line
                        .as_bytes()
                        .get(1)
                        .is_some_and(|b| b.is_ascii_uppercase()),
                "a text line reads as a roff request: {line}"
            );
        }
    }
}
