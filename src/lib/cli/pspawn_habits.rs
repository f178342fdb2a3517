//! Options pspawn does not take, met where its program would start: the
//! spellings srun and prun users reach for are named with what to type
//! instead; any other is refused with the nearest option pspawn has.

use clap::CommandFactory;

/// srun/prun spellings pspawn does not take, and what to do instead.
const HABITS: &[(&[&str], &str)] = &[
    (
        &["-N", "--nodes"],
        "srun's node count: ask for the nodes with `palloc -N N -- pspawn …` (or spread over \
the nodes you have with --map-by node, or name them with -H)",
    ),
    (
        &["-l", "--label"],
        "srun's output labels: pspawn spells it --tag-output",
    ),
    (
        &["-D", "--chdir"],
        "srun's working directory: pspawn spells it --wdir DIR",
    ),
    (
        &["-J", "--job-name"],
        "a job name: PMIx jobs are named by their namespace, which `pspawn --detach` prints",
    ),
    (
        &["-c", "--cpus-per-task"],
        "CPUs per task: give the mapping, e.g. --map-by ppr:1:node:pe=4",
    ),
    (
        &["--export"],
        "srun's --export: pspawn passes variables with -x VAR or -x VAR=VALUE",
    ),
    (
        &["--pty"],
        "a pseudo-terminal: PMIx forwards stdin and output as streams, not a terminal",
    ),
    (
        &["-w", "--nodelist"],
        "srun's node list: pspawn spells it -H/--host LIST",
    ),
    (
        &["-t", "--time"],
        "srun's time limit: pspawn spells it --timeout DURATION",
    ),
];

/// The sentence refusing `first`, the first word where the program should
/// be, when it is an option (`-…`) pspawn does not know; `None` when it is
/// a program.
pub(crate) fn unknown_option(first: Option<&String>) -> Option<String> {
    let first = first?;
    if !first.starts_with('-') || first == "-" {
        return None;
    }
    let name = first.split('=').next().unwrap_or(first);
    let start = "options go before the program; `--` starts the program (`pspawn -- PROGRAM`)";
    if let Some((_, instead)) = HABITS.iter().find(|(names, _)| names.contains(&name)) {
        return Some(format!(
            "pspawn has no option `{name}` ({instead}); {start}"
        ));
    }
    let near = nearest(name)
        .map(|n| format!(": did you mean `{n}`?"))
        .unwrap_or_default();
    Some(format!("unknown option `{name}`{near} {start}"))
}

/// pspawn's option nearest to `name`, if one is close.
fn nearest(name: &str) -> Option<String> {
    let cmd = crate::cli::PspawnArgs::command();
    let spelled: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| {
            let long = a.get_long().map(|l| format!("--{l}"));
            let short = a.get_short().map(|s| format!("-{s}"));
            long.into_iter().chain(short)
        })
        .collect();
    spelled
        .into_iter()
        .map(|s| (strsim::levenshtein(&s, name), s))
        .filter(|(d, s)| *d <= 2 && s.len() > 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn habits_are_named_and_typos_get_the_nearest() {
        let said = |w: &str| unknown_option(Some(&w.to_string()));
        assert!(said("-N").is_some_and(|m| m.contains("palloc -N")));
        assert!(said("--chdir=/tmp").is_some_and(|m| m.contains("--wdir")));
        assert!(said("--tag-ouput").is_some_and(|m| m.contains("`--tag-output`")));
        assert!(said("--zzzzzzzz").is_some_and(|m| m.contains("`--` starts the program")));
        assert_eq!(said("hostname"), None);
        assert_eq!(unknown_option(None), None);
    }
}
