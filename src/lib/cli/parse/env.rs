//! Environment specifications for `pspawn -x/--env VAR[=VAL]`.

/// One `-x` entry: `VAR` forwards the variable from the caller's environment
/// (resolved by the binary at launch time), `VAR=VAL` sets it explicitly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvSpec {
    /// Variable name: a letter or `_`, then letters, digits or `_`.
    pub name: String,
    /// `Some(value)` for `VAR=VAL` (the value may be empty), `None` for `VAR`.
    pub value: Option<String>,
}

const ENV_FORMS: &str = "VAR (forward it from this environment) or VAR=VALUE, where VAR starts \
with a letter or _ and continues with letters, digits or _";

/// Parse `VAR` or `VAR=VALUE`.
pub fn parse_env(s: &str) -> Result<EnvSpec, String> {
    let (name, value) = match s.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (s, None),
    };
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!(
            "`{s}` is not a valid environment setting: expected {ENV_FORMS}"
        ));
    }
    Ok(EnvSpec {
        name: name.to_string(),
        value,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            parse_env("PATH"),
            Ok(EnvSpec {
                name: "PATH".into(),
                value: None
            })
        );
        assert_eq!(
            parse_env("A_1=x=y"),
            Ok(EnvSpec {
                name: "A_1".into(),
                value: Some("x=y".into())
            })
        );
        assert_eq!(parse_env("E=").map(|e| e.value), Ok(Some(String::new())));
        for b in ["", "=x", "1A=2", "A-B", "A B=1"] {
            assert!(parse_env(b).unwrap_err().contains("VAR=VALUE"), "{b}");
        }
    }
}
