//! Namespaces (tools and jobs) and the spawn genealogy.
//!
//! Each namespace keeps a count of its live transitive descendants, updated
//! along the ancestor chain on every spawn and termination. "Has namespace O
//! any live derived child?" is then `live_desc(O) > 0`, which is exactly the
//! answer of a walk over O's spawn subtree (§8.2.1.7, §6.5.1.5 item 2) but
//! costs O(depth) per spawn/termination instead of O(subtree) per question.

use std::collections::HashMap;

/// What a namespace is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NsKind {
    /// Named before it was seen (e.g. a PMIX_ALLOC_TARGET not yet running).
    Placeholder,
    /// A connected tool.
    Tool,
    /// A job launched by the DVM.
    Job,
}

/// Run state of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JobState {
    Running,
    /// Its nodes left the DVM; the server is terminating it.
    Killing(String),
    Terminated,
}

/// One namespace in the genealogy.
#[derive(Debug, Clone)]
pub(crate) struct NsEntry {
    pub name: String,
    pub kind: NsKind,
    pub parent: Option<u32>,
    pub live: bool,
    /// True once it lived and then terminated.
    pub ended: bool,
    /// Live transitive descendants (self excluded).
    pub live_desc: u64,
    /// Allocation ids this namespace is the owning namespace of.
    pub owned: Vec<String>,
    /// Placement per node index: procs there.
    pub placement: Vec<(usize, u32)>,
    /// Slots each of its processes takes (`PMIX_CPUS_PER_PROC`, `PE=N`).
    pub slots_per_proc: u32,
    pub state: JobState,
    pub exit_status: Option<i32>,
    /// Entries whose parent this is.
    pub children: u32,
    /// The name was chosen by its peer (not minted by the DVM): once the
    /// entry is forgotten, the name is remembered so it is never reused.
    pub given: bool,
    /// When it was started (launch order: slots are reused, so the table's
    /// order is not it).
    pub born: u64,
    /// An ended job past the history of ended jobs: forgotten as soon as
    /// nothing needs it.
    pub aged: bool,
}

impl NsEntry {
    fn blank(name: &str) -> NsEntry {
        NsEntry {
            name: name.to_string(),
            kind: NsKind::Placeholder,
            parent: None,
            live: false,
            ended: false,
            live_desc: 0,
            owned: Vec::new(),
            placement: Vec::new(),
            slots_per_proc: 1,
            state: JobState::Terminated,
            exit_status: None,
            children: 0,
            given: true,
            born: 0,
            aged: false,
        }
    }
}

/// The namespace table and genealogy.
#[derive(Debug, Clone, Default)]
pub(crate) struct Genealogy {
    pub ents: Vec<NsEntry>,
    pub by_name: HashMap<String, u32>,
    /// Slots of forgotten entries, reused by new ones.
    pub free: Vec<u32>,
    /// Starts so far (the next entry's [`NsEntry::born`]).
    pub started: u64,
}

impl Genealogy {
    /// Index of a namespace, creating a placeholder when unknown.
    pub(crate) fn ensure(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.by_name.get(name) {
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.ents[i as usize] = NsEntry::blank(name);
                i
            }
            None => {
                self.ents.push(NsEntry::blank(name));
                (self.ents.len() - 1) as u32
            }
        };
        self.by_name.insert(name.to_string(), i);
        i
    }

    /// True when nothing needs entry `i` any more: an ended tool, or an
    /// ended job past the history ([`NsEntry::aged`]), that owns no
    /// reservation and is no entry's parent (so no CHILD rule, no job
    /// listing and no descendant count can reach it).
    pub(crate) fn forgettable(&self, i: u32) -> bool {
        let e = self.at(i);
        let done = match e.kind {
            NsKind::Tool => true,
            NsKind::Job => e.aged,
            NsKind::Placeholder => false,
        };
        done && e.ended
            && !e.live
            && e.owned.is_empty()
            && e.children == 0
            && e.live_desc == 0
            && e.placement.is_empty()
    }

    /// Forget entry `i` (see [`Genealogy::forgettable`]): its slot is
    /// reused. Returns the entry (its parent no longer counts it).
    pub(crate) fn forget(&mut self, i: u32) -> NsEntry {
        let e = std::mem::replace(&mut self.ents[i as usize], NsEntry::blank(""));
        self.by_name.remove(&e.name);
        if let Some(p) = e.parent {
            let pe = self.at_mut(p);
            pe.children = pe.children.saturating_sub(1);
        }
        self.free.push(i);
        e
    }

    /// Namespaces known (forgotten ones excluded).
    pub(crate) fn len(&self) -> usize {
        self.by_name.len()
    }

    /// Index of a known namespace.
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The entry at `i`.
    pub(crate) fn at(&self, i: u32) -> &NsEntry {
        &self.ents[i as usize]
    }

    /// The entry at `i`, mutable.
    pub(crate) fn at_mut(&mut self, i: u32) -> &mut NsEntry {
        &mut self.ents[i as usize]
    }

    /// True when `name` exists and is not a never-seen placeholder.
    pub(crate) fn is_registered(&self, name: &str) -> bool {
        self.get(name)
            .is_some_and(|i| self.at(i).kind != NsKind::Placeholder)
    }

    /// Brings namespace `i` to life under `parent`, counting it as a live
    /// descendant of every ancestor.
    /// A parent that would close a cycle (a placeholder used as parent and
    /// later started under its own descendant) is dropped.
    pub(crate) fn start(&mut self, i: u32, kind: NsKind, parent: Option<u32>) {
        let mut parent = parent;
        let mut a = parent;
        while let Some(p) = a {
            if p == i {
                parent = None;
                break;
            }
            a = self.at(p).parent;
        }
        if let Some(p) = parent {
            self.at_mut(p).children += 1;
        }
        self.started += 1;
        let born = self.started;
        {
            let e = self.at_mut(i);
            e.kind = kind;
            e.parent = parent;
            e.born = born;
            e.live = true;
            e.ended = false;
            e.state = JobState::Running;
        }
        // A placeholder may already have live descendants: they now count for
        // the new ancestors too.
        let add = 1 + self.at(i).live_desc;
        let mut a = parent;
        while let Some(p) = a {
            let e = self.at_mut(p);
            e.live_desc += add;
            a = e.parent;
        }
    }

    /// Ends namespace `i`. Returns the namespaces whose CHILD-flavoured
    /// dispositions may now fire: `i` itself, then every ended ancestor whose
    /// live-descendant count just reached zero.
    pub(crate) fn end(&mut self, i: u32) -> Vec<u32> {
        {
            let e = self.at_mut(i);
            e.live = false;
            e.ended = true;
            e.state = JobState::Terminated;
        }
        let mut out = vec![i];
        let mut a = self.at(i).parent;
        while let Some(p) = a {
            let e = self.at_mut(p);
            e.live_desc = e.live_desc.saturating_sub(1);
            if e.live_desc == 0 && e.ended {
                out.push(p);
            }
            a = e.parent;
        }
        out
    }
}
