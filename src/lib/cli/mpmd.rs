//! Splitting pspawn's trailing arguments into MPMD application contexts.
//!
//! `PROG ARGS… : [-n N] [-x VAR[=VAL]] [--wdir DIR] [-H LIST] PROG ARGS… : …`
//! A lone `:` separates apps. Per-app options come before that app's
//! program; `--` ends them explicitly (so a program may start with `-`).

use super::parse::{parse_count_u32, parse_env, parse_hostlist_arg, EnvSpec};
use super::request::AppSpec;

const APP_FORMS: &str =
    "PROGRAM [ARGS…] [: [-n N] [-x VAR[=VAL]] [--wdir DIR] [-H LIST] PROGRAM [ARGS…]]…";

/// Split `args` at lone `:` into apps; `np`, `env`, `wdir`, `hosts` are the
/// defaults given before the first program.
pub fn split_apps(
    args: &[String],
    np: Option<u32>,
    env: &[EnvSpec],
    wdir: Option<&str>,
    hosts: Option<&[String]>,
) -> Result<Vec<AppSpec>, String> {
    let mut apps = Vec::new();
    for (i, seg) in args.split(|a| a == ":").enumerate() {
        if seg.is_empty() {
            return Err(format!(
                "app {} is empty (a `:` with no program after it): expected {APP_FORMS}",
                i + 1
            ));
        }
        let mut app = AppSpec {
            np: np.unwrap_or(1),
            program: String::new(),
            args: Vec::new(),
            env: env.to_vec(),
            wdir: wdir.map(str::to_string),
            hosts: hosts.map(<[String]>::to_vec).unwrap_or_default(),
            env_only: false,
        };
        // The first app's options are the global ones clap already parsed.
        let rest = if i == 0 {
            seg
        } else {
            app_options(seg, &mut app, i + 1)?
        };
        let (prog, prog_args) = rest.split_first().ok_or_else(|| {
            format!(
                "app {} has options but no program: expected {APP_FORMS}",
                i + 1
            )
        })?;
        if prog.is_empty() {
            return Err(format!("app {} has an empty program name", i + 1));
        }
        app.program = prog.clone();
        app.args = prog_args.to_vec();
        apps.push(app);
    }
    Ok(apps)
}

/// Consume per-app options at the start of `seg`; return what follows.
fn app_options<'a>(seg: &'a [String], app: &mut AppSpec, n: usize) -> Result<&'a [String], String> {
    let mut i = 0;
    let mut hosts_set = false;
    while let Some(tok) = seg.get(i) {
        if tok == "--" {
            return Ok(&seg[i + 1..]);
        }
        if !tok.starts_with('-') || tok == "-" {
            return Ok(&seg[i..]);
        }
        let (name, inline) = match tok.split_once('=') {
            Some((k, v)) if tok.starts_with("--") => (k, Some(v.to_string())),
            _ => (tok.as_str(), None),
        };
        let (name, inline) = match (name, inline) {
            // `-n4`, `-xVAR=1`, `-Hnode1`: short flag with attached value.
            (s, None) if !s.starts_with("--") && s.is_char_boundary(2) && s.len() > 2 => {
                (&s[..2], Some(s[2..].to_string()))
            }
            other => other,
        };
        let mut value = || -> Result<String, String> {
            if let Some(v) = inline.clone() {
                return Ok(v);
            }
            i += 1;
            seg.get(i)
                .cloned()
                .ok_or_else(|| format!("app {n}: `{name}` needs a value"))
        };
        match name {
            "-n" | "--np" => app.np = parse_count_u32(&value()?).map_err(|e| format!("app {n}: {e}"))?,
            "-x" | "--env" => app.env.push(parse_env(&value()?).map_err(|e| format!("app {n}: {e}"))?),
            "--wdir" | "-D" | "--chdir" => app.wdir = Some(value()?),
            "-H" | "-w" | "--host" => {
                let list = parse_hostlist_arg(&value()?)
                    .map(|l| l.0)
                    .map_err(|e| format!("app {n}: {e}"))?;
                if !hosts_set {
                    app.hosts.clear();
                    hosts_set = true;
                }
                app.hosts.extend(list);
            }
            other => {
                return Err(format!(
                    "app {n}: `{other}` is not a per-app option (use -n, -x, --wdir/-D, -H/-w, or `--` before a program starting with `-`): expected {APP_FORMS}"
                ))
            }
        }
        i += 1;
    }
    Err(format!(
        "app {n} has options but no program: expected {APP_FORMS}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn mpmd() {
        let apps = split_apps(
            &v("a -x 1 : -n 3 -x B=2 --wdir=/t b y : -n2 c"),
            Some(2),
            &[],
            None,
            None,
        )
        .unwrap();
        assert_eq!(apps.len(), 3);
        assert_eq!(
            (apps[0].np, apps[0].program.as_str(), apps[0].args.clone()),
            (2, "a", v("-x 1"))
        );
        assert_eq!(
            (apps[1].np, apps[1].wdir.as_deref(), apps[1].args.clone()),
            (3, Some("/t"), v("y"))
        );
        assert_eq!(apps[1].env[0].name, "B");
        assert_eq!(apps[2].np, 2);
        let apps = split_apps(&v("a : -- -weird"), None, &[], None, None).unwrap();
        assert_eq!(apps[1].program, "-weird");
    }

    #[test]
    fn refusals() {
        for bad in [
            "a :",
            ": a",
            "a : : b",
            "a : -n 0 b",
            "a : -n",
            "a : -n 2",
            "a : --bogus b",
            "a : -x 1= b",
        ] {
            assert!(split_apps(&v(bad), None, &[], None, None).is_err(), "{bad}");
        }
    }
}
