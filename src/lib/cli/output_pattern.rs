//! `pspawn -o/-e PATTERN`: a file name per process, as srun's `-o`:
//! `%j` the job's namespace (Slurm's job id), `%r` or `%t` the rank
//! (Slurm's task id), `%a` the index of a `--array` task, `%A` the array's
//! id (Slurm's array master job id: here the namespace of the pspawn that
//! runs the array; a single job's own namespace), `%%` a `%`.

/// One piece of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    /// Literal text.
    Text(String),
    /// `%j`: the job's namespace.
    Job,
    /// `%r` or `%t`: the rank.
    Rank,
    /// `%a`: the array task's index (`pspawn --array`).
    Index,
    /// `%A`: the array's id (a single job: its namespace).
    Array,
}

/// A checked `--output`/`--error` pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPattern {
    pieces: Vec<Piece>,
}

impl OutputPattern {
    /// Parse `s`: not empty, `%` only before `j`, `r`, `t`, `a` or `%`.
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
                    Some('a') => Some(Piece::Index),
                    Some('A') => Some(Piece::Array),
                    Some('%') => None,
                    _ => return Err(format!(
                        "`{s}`: `%` starts %j (the job's namespace), %t or %r (the rank), %a (the --array index), %A (the array's id) or %% (a `%`)"
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
                Piece::Job | Piece::Array => nspace.to_string(),
                Piece::Rank => rank.to_string(),
                Piece::Index => "%a".to_string(),
            })
            .collect()
    }

    /// Whether the name holds `%a`, which only an array task has.
    pub fn names_index(&self) -> bool {
        self.pieces.contains(&Piece::Index)
    }

    /// The pattern of array task `index`: `%a` replaced by it.
    pub fn for_task(&self, index: u32) -> OutputPattern {
        self.filled(&Piece::Index, &index.to_string())
    }

    /// The pattern of the array whose id is `id`: `%A` replaced by it.
    pub fn for_array(&self, id: &str) -> OutputPattern {
        self.filled(&Piece::Array, id)
    }

    /// The pattern with every `which` replaced by the text `with`.
    fn filled(&self, which: &Piece, with: &str) -> OutputPattern {
        let pieces = self
            .pieces
            .iter()
            .map(|p| match p {
                p if p == which => Piece::Text(with.to_string()),
                other => other.clone(),
            })
            .collect();
        OutputPattern { pieces }
    }

    /// Whether the name depends on the job's namespace (unknown before the
    /// spawn is answered).
    pub fn names_job(&self) -> bool {
        self.pieces.contains(&Piece::Job) || self.pieces.contains(&Piece::Array)
    }

    /// A shell word for the name, `%j` and `%r` taken from the process's
    /// `PMIX_NAMESPACE` and `PMIX_RANK`, literal parts single-quoted.
    pub fn shell_word(&self) -> String {
        self.pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => format!("'{}'", t.replace('\'', "'\\''")),
                Piece::Job | Piece::Array => "\"${PMIX_NAMESPACE}\"".to_string(),
                Piece::Rank => "\"${PMIX_RANK}\"".to_string(),
                Piece::Index => "\"${PMIX_ARRAY_TASK_ID}\"".to_string(),
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
    /// The files of the array whose id is `id` (`%A` replaced by it).
    pub fn for_array(&self, id: &str) -> OutputFiles {
        self.map(|p| p.for_array(id))
    }

    /// The files of array task `index` (`%a` replaced by it).
    pub fn for_task(&self, index: u32) -> OutputFiles {
        self.map(|p| p.for_task(index))
    }

    /// Both patterns through `f`.
    fn map(&self, f: impl Fn(&OutputPattern) -> OutputPattern) -> OutputFiles {
        OutputFiles {
            out: f(&self.out),
            err: self.err.as_ref().map(f),
        }
    }

    /// Whether either pattern holds `%a`.
    pub fn names_index(&self) -> bool {
        self.out.names_index() || self.err.as_ref().is_some_and(OutputPattern::names_index)
    }

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
        let a = OutputPattern::parse("t-%a.%t").expect("valid");
        assert!(a.names_index());
        assert_eq!(a.for_task(7).expand("ns@1", 0), "t-7.0");
        assert!(!a.for_task(7).names_index());
        assert!(OutputPattern::parse("").is_err());
        assert_eq!(
            OutputPattern::parse("it's-%t").expect("valid").shell_word(),
            "'it'\\''s-'\"${PMIX_RANK}\""
        );
    }

    #[test]
    fn percent_a_capital_is_the_arrays_id() {
        let p = OutputPattern::parse("o_%A_%a.txt").expect("valid");
        assert_eq!(
            p.for_array("ns@7").for_task(3).expand("ns@9", 0),
            "o_ns@7_3.txt"
        );
        assert_eq!(
            OutputPattern::parse("o_%A.txt")
                .expect("valid")
                .expand("ns@9", 0),
            "o_ns@9.txt"
        );
    }
}
