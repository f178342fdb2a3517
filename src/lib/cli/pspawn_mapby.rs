//! `pspawn --map-by POLICY`: any policy is passed to the DVM (PRRTE has
//! many, with modifiers), but the shell completions offer the usual ones.

use clap::builder::{PossibleValue, TypedValueParser};

use super::parse::parse_id;

/// The mapping policies the completions offer (`pdvm` takes slot, node,
/// core, hwthread and ppr:N:node; PRRTE also the hardware levels).
pub const MAP_BY_POLICIES: &[&str] = &[
    "slot",
    "node",
    "core",
    "hwthread",
    "package",
    "numa",
    "l3cache",
    "ppr:1:node",
    "slot:OVERSUBSCRIBE",
    "node:OVERSUBSCRIBE",
];

/// A parser that accepts any policy word (as [`parse_id`]) and lists
/// [`MAP_BY_POLICIES`] for completion.
#[derive(Debug, Clone, Copy)]
pub struct MapByParser;

impl TypedValueParser for MapByParser {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let text = value.to_string_lossy();
        parse_id(&text).map_err(|msg| {
            let name = arg.map_or("--map-by".to_string(), |a| format!("--{}", a.get_id()));
            cmd.clone().error(
                clap::error::ErrorKind::InvalidValue,
                format!("{name}: {msg}"),
            )
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            MAP_BY_POLICIES.iter().map(|p| PossibleValue::new(*p)),
        ))
    }
}
