//! placeholder: filled in by the owning work item.
