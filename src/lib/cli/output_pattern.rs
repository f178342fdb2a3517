//! `pspawn -o/-e PATTERN`: a file name per process, as srun's `-o`:
//! `%j` the job's namespace (Slurm's job id), `%r` or `%t` the rank
//! (Slurm's task id), `%%` a `%`.

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Literal text.
    Text(String),
    /// `%j`: the job's namespace.
    Job,
    /// `%r` or `%t`: the rank.
    Rank,
}

/// A checked `--output`/`--error` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPattern {
    pieces: Vec<Piece>,
}

impl OutputPattern {
    /// Parse `s`: not empty, `%` only before `j`, `r`, `t` or `%`.
    pub fn parse(s: &str) -> Result<OutputPattern, String> {
        if s.is_empty() {
            return Err("an empty file name: give a path such as job-%j.%t.out".into());
        }
        let mut pieces = Vec::new();
        let mut text = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            let piece = match (c, c == '%') {
                (_, false) => None,
                _ => match chars.next() {
                    Some('j') => Some(Piece::Job),
                    Some('r' | 't') => Some(Piece::Rank),
                    Some('%') => None,
                    _ => return Err(format!(
                        "`{s}`: `%` starts %j (the job's namespace), %t or %r (the rank) or %% (a `%`)"
                    )),
                },
            };
            match piece {
                None => text.push(c),
                Some(p) => {
                    if !text.is_empty() {
                        pieces.push(Piece::Text(std::mem::take(&mut text)));
                    }
                    pieces.push(p);
                }
            }
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text));
        }
        Ok(OutputPattern { pieces })
    }

    /// The file name for rank `rank` of job `nspace`.
    pub fn expand(&self, nspace: &str, rank: u32) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.clone(),
                Piece::Job => nspace.to_string(),
                Piece::Rank => rank.to_string(),
            })
            .collect()
    }

    /// Whether the name depends on the job's namespace (unknown before the
    /// spawn is answered).
    pub fn names_job(&self) -> bool {
        self.pieces.contains(&Piece::Job)
    }

    /// A shell word for the name, `%j` and `%r` taken from the process's
    /// `PMIX_NAMESPACE` and `PMIX_RANK`, literal parts single-quoted.
    pub fn shell_word(&self) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => format!("'{}'", t.replace('\'', "'\\''")),
                Piece::Job => "\"${PMIX_NAMESPACE}\"".to_string(),
                Piece::Rank => "\"${PMIX_RANK}\"".to_string(),
            })
            .collect()
    }
}

/// `pspawn -o OUT [-e ERR]`: where each process's stdout and stderr go
/// (without `-e`, stderr goes to the `-o` file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFiles {
    /// The stdout pattern.
    pub out: OutputPattern,
    /// The stderr pattern, when it differs from `out`'s.
    pub err: Option<OutputPattern>,
}

impl OutputFiles {
    /// The pattern for stderr (`true`) or stdout.
    pub fn pattern(&self, stderr: bool) -> &OutputPattern {
        match (&self.err, stderr) {
            (Some(e), true) => e,
            _ => &self.out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_expand_as_sruns() {
        let p = OutputPattern::parse("job-%j.%t.%r%%").expect("valid");
        assert_eq!(p.expand("ns@1", 3), "job-ns@1.3.3%");
        assert!(p.names_job());
        assert!(!OutputPattern::parse("a-%t").expect("valid").names_job());
        assert!(OutputPattern::parse("x%q").is_err());
        assert!(OutputPattern::parse("").is_err());
        assert_eq!(
            OutputPattern::parse("it's-%t").expect("valid").shell_word(),
            "'it'\\''s-'\"${PMIX_RANK}\""
        );
    }
}
