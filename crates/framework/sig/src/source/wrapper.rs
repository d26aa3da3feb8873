//! `sh -c 'prog args'`: what a live trace source would trace is the shell.
//!
//! Neither source follows the programs a shell starts (QEMU user mode runs an
//! `exec`ed program natively; lackey without `--trace-children` traces only the
//! shell), so a profile "of" `sh -c 'gzip …'` would silently be the shell's. A script
//! that is one simple command is run directly instead; anything else is refused with
//! the reason.

use hetsched_core::{Error, Result};

/// Shells whose `-c SCRIPT` is recognised.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];
/// Characters that make a script more than one simple command.
const SPECIAL: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '*', '?', '[', ']', '{', '}', '~', '#', '\n',
];

/// The command to trace for `command`: `None` to trace it as given, `Some(argv)` for
/// the simple command a `SHELL -c SCRIPT` wrapper would run. A wrapper around anything
/// else is an input error that says why.
pub fn unwrap_shell(command: &[String]) -> Result<Option<Vec<String>>> {
    let [shell, flag, rest @ ..] = command else {
        return Ok(None);
    };
    let name = shell.rsplit('/').next().unwrap_or(shell);
    if !SHELLS.contains(&name) || flag != "-c" {
        return Ok(None);
    }
    let refuse = |why: &str| {
        Error::input(format!(
            "`{name} -c`: {why}; the trace sources follow only the process they start, so this \
             would profile the shell, not the program it runs. Profile the program directly: \
             hetsched signature profile -- PROG ARGS"
        ))
    };
    let [script] = rest else {
        return Err(refuse("expected exactly one script argument"));
    };
    if let Some(c) = script.chars().find(|c| SPECIAL.contains(c)) {
        return Err(refuse(&format!(
            "the script is not one simple command (it contains {c:?})"
        )));
    }
    let argv = shlex::split(script).ok_or_else(|| refuse("the script's quoting is unbalanced"))?;
    match argv.first() {
        None => Err(refuse("the script is empty")),
        Some(w) if w.contains('=') => Err(refuse("the script sets variables")),
        Some(_) => Ok(Some(argv)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_simple_command_is_unwrapped() {
        let got = unwrap_shell(&args(&["/bin/sh", "-c", "gzip -9 -c 'my file.txt'"])).unwrap();
        assert_eq!(got, Some(args(&["gzip", "-9", "-c", "my file.txt"])));
        assert_eq!(unwrap_shell(&args(&["gzip", "-c", "x"])).unwrap(), None);
        assert_eq!(unwrap_shell(&args(&["sh", "script.sh"])).unwrap(), None);
    }

    #[test]
    fn anything_more_is_refused_with_the_reason() {
        for (script, why) in [
            ("gzip -c x | wc -c", "'|'"),
            ("gzip -c x > y", "'>'"),
            ("FOO=1 gzip x", "sets variables"),
            ("gzip 'x", "unbalanced"),
            ("", "empty"),
        ] {
            let e = unwrap_shell(&args(&["bash", "-c", script])).unwrap_err();
            assert!(matches!(e, Error::Input(_)), "{e}");
            assert!(e.to_string().contains(why), "{script}: {e}");
            assert!(e.to_string().contains("would profile the shell"), "{e}");
        }
    }
}
