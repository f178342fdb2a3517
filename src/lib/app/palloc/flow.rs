//! palloc's run as an explicit sequence of states: plan the request (and
//! hand it to a detached palloc when it must outlive this one), connect,
//! settle what is sent, ask, wait for the answer, then use the grant
//! (print it, hold it, or run a command in it) and end.

use std::time::Instant;

use crate::cli::exit::{AttrsPresent, Exit, Operation};
use crate::cli::request::AllocAsk;
use crate::cli::{PallocArgs, PallocMode};
use crate::codec::{dt, Info};
use crate::conn::Identity;
use crate::ops::alloc::{begin_allocate, decode_alloc_reply, AllocReply};
use crate::ops::events::register;
use crate::ops::Session;
use crate::proto::keys;
use crate::proto::status::Status;
use crate::proto::{Directive, Inheritance};
use crate::render::human::allocation_line;
use crate::render::{AllocationRecord, ExitRecord, RequestRecord};

use super::command::run_command;
use super::detach::{refusal_line, submit_detached, Detach};
use crate::app::alloc_wait::{
    as_the_dvm_has_it, await_answer, granted_record, hold, request_infos, step, Awaiting,
    QueuedHolder, Step,
};
use crate::app::requester::{acts_as_tool, generated_request_id, interactive};
use crate::app::submit_pipe::Submitter;
use crate::app::{connect_for, finish, signals, Failure, Ui};

type Outcome = std::result::Result<i32, Failure>;

/// What is asked, decided before connecting.
struct Plan<'a> {
    args: &'a PallocArgs,
    ui: &'a Ui,
    req: AllocAsk,
    mode: PallocMode,
    /// `palloc` with no command at a terminal: an interactive shell.
    opens_shell: bool,
}

/// A plan once connected: who asks, and how a refusal is explained.
struct Asked<'a> {
    plan: Plan<'a>,
    from_application: bool,
    attrs: AttrsPresent,
    op: Operation,
    /// The rule the user named, if any.
    user_rule: Option<Inheritance>,
    /// palloc chose CHILD itself (the user named none).
    default_rule: bool,
}

/// Run palloc through its states; the exit code. A detached palloc that
/// fails before its grant says why on its pipe (the palloc that started
/// it reports it, with its status).
pub(super) fn run(args: &PallocArgs, ui: &Ui) -> Outcome {
    let out = run_flow(args, ui);
    if let Err(f) = &out {
        if let Some(sub) = Submitter::from_env() {
            sub.say(&refusal_line(f));
        }
    }
    out
}

/// A batch job of a `palloc --stdin-requests` line: what `palloc --no-wait
/// -- SCRIPT` does, the same checks first; its request id and holder,
/// nothing printed.
pub(super) fn submit_batch(
    args: &PallocArgs,
    ui: &Ui,
    standby: &mut super::standby::Standby,
) -> std::result::Result<super::detach::Submitted, Failure> {
    let plan = Plan::new(args, ui);
    if plan.req.directive != Directive::New || plan.mode != PallocMode::NoWait {
        return Err(Failure::with(
            Exit::Usage,
            None,
            "a --stdin-requests line submits a new batch job: no --extend, --hold or --stdin-requests"
                .to_string(),
        ));
    }
    plan.warning_is_heard()?;
    plan.command_runs()?;
    super::detach::submit_line(args, &plan.req, ui, standby)
}

fn run_flow(args: &PallocArgs, ui: &Ui) -> Outcome {
    let plan = Plan::new(args, ui);
    plan.warning_is_heard()?;
    plan.command_runs()?;
    if let Some(handed) = plan.hand_off_before_connecting() {
        return handed;
    }
    let s = connect_for(&args.connect, ui, plan.held())?;
    let mut asked = Asked::new(plan, &s);
    if let Some(detach) = asked.hand_off_after_connecting() {
        finish(s);
        return submit_detached(asked.plan.args, &asked.plan.req, ui, detach);
    }
    let send_inheritance = match asked.settle(&s) {
        Ok(send) => send,
        Err(f) => {
            finish(s);
            return Err(f);
        }
    };
    asked.listen_for_warnings(&s);
    let infos = request_infos(&asked.plan.req, s.server_version(), send_inheritance);
    let tag = begin_allocate(&s, asked.plan.req.directive, &infos)
        .map_err(|e| Failure::refused(asked.op, &asked.attrs, &e))?;
    if asked.plan.mode == PallocMode::NoWait {
        return asked.report_submission(&s, tag);
    }
    let mut submitter = Submitter::from_env();
    let reply = match asked.wait_for_answer(&s, tag, &infos, &mut submitter) {
        Ok(r) => r,
        Err(f) => {
            if let Some(sub) = submitter.take() {
                sub.say(&refusal_line(&f));
            }
            finish(s);
            return Err(f);
        }
    };
    asked.use_grant(s, &reply, submitter)
}

impl<'a> Plan<'a> {
    /// A timeout warning goes to the process that sent the request (spec
    /// 001 §8.2.1.9.5): a palloc that returns once answered (a grant
    /// printed for a script, `--no-wait` without CMD) would leave it to
    /// nobody, so `--warn-timeout` is refused there before connecting, the
    /// same from a script as at a terminal.
    fn warning_is_heard(&self) -> std::result::Result<(), Failure> {
        let returns = match self.mode {
            PallocMode::Print => true,
            PallocMode::NoWait => self.args.command.is_empty(),
            PallocMode::Hold | PallocMode::Run(_) => false,
        };
        match self.req.attrs.warn_timeout {
            Some(w) if returns => Err(Failure::with(
                Exit::Usage,
                None,
                format!(
                    "--warn-timeout {w}s: the warning goes only to the process that sent the \
request (spec 001 §8.2.1.9.5), and this palloc returns once the request is answered, so nobody \
would show it. Keep palloc as the requester, which prints the warning: `palloc … --warn-timeout \
{w}s -- CMD` or `palloc … --warn-timeout {w}s --hold`; or leave --warn-timeout out and arm it \
from the process that will listen: `pwatch --alloc ALLOC_ID --warn-timeout {w}s --event \
timeout-warning --exec CMD`"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The command palloc is to run (`-- CMD`, a batch script) can be run,
    /// checked before anything is asked: sbatch refuses a script it cannot
    /// open at submission, and a job that could never start would
    /// otherwise be queued and granted for nothing. The status is a
    /// shell's: 127 not found, 126 not executable.
    fn command_runs(&self) -> std::result::Result<(), Failure> {
        let Some(program) = self.args.command.first() else {
            return Ok(());
        };
        if crate::app::launch::program_exists(program) {
            return Ok(());
        }
        let present = program.contains('/') && std::path::Path::new(program).is_file();
        let (code, what) = match (present, program.contains('/')) {
            (true, _) => (126, "not executable (chmod +x it)"),
            (false, true) => (127, "not found"),
            (false, false) => (127, "not a program on PATH"),
        };
        Err(Failure::with(
            Exit::Command(code),
            None,
            format!("cannot run `{program}`: {what}; nothing was asked of the DVM"),
        ))
    }

    fn new(args: &'a PallocArgs, ui: &'a Ui) -> Plan<'a> {
        let mut req = args.request();
        if let Some(id) = crate::app::submit_pipe::renamed_request_id() {
            req.attrs.req_id = Some(id);
        }
        let shell = std::env::var("SHELL").ok();
        let mode = args.mode_at(interactive(), shell.as_deref());
        let opens_shell = args.command.is_empty() && matches!(mode, PallocMode::Run(_));
        if req.directive == Directive::New && req.attrs.req_id.is_none() {
            req.attrs.req_id = Some(generated_request_id());
        }
        Plan {
            args,
            ui,
            req,
            mode,
            opens_shell,
        }
    }

    /// Outside a job, a tool's request dies with its namespace: a request
    /// that must outlive this palloc (`--no-wait`, as sbatch; a grant
    /// printed for a script, as `salloc --no-shell`) is handed, before
    /// connecting, to a detached palloc that waits for it and then holds
    /// the grant until it is released, expires or the DVM ends.
    fn hand_off_before_connecting(&self) -> Option<Outcome> {
        if self.req.directive != Directive::New {
            return None;
        }
        if self.mode == PallocMode::NoWait && !self.args.command.is_empty() {
            // A batch script, as sbatch's inside an salloc: a job of its
            // own whatever palloc runs in, held by a detached palloc that
            // acts as a tool.
            return Some(submit_detached(
                self.args,
                &self.req,
                self.ui,
                Detach::Submit,
            ));
        }
        if !acts_as_tool(self.args) {
            return None;
        }
        let detach = match self.mode {
            PallocMode::NoWait => Detach::Submit,
            PallocMode::Print if self.req.attrs.target.is_none() => Detach::UntilGranted,
            _ => return None,
        };
        Some(submit_detached(self.args, &self.req, self.ui, detach))
    }

    /// An EXTEND names its allocation by id or by request id: either finds
    /// the palloc holding it.
    fn held(&self) -> Option<&str> {
        self.req.attrs.alloc_id.as_deref().or(self
            .req
            .attrs
            .req_id
            .as_deref()
            .filter(|_| self.req.directive == Directive::Extend))
    }
}

impl<'a> Asked<'a> {
    fn new(plan: Plan<'a>, s: &Session) -> Asked<'a> {
        let req = &plan.req;
        let from_application = matches!(s.conn().identity(), Identity::Client { .. });
        let attrs = AttrsPresent {
            target: req.attrs.target.is_some(),
            from_application,
            alloc_id: req.attrs.alloc_id.is_some(),
            req_id: req.attrs.req_id.is_some(),
            non_default_inheritance: req
                .attrs
                .inheritance()
                .is_some_and(|c| c != Inheritance::Default),
            spawn_target: false,
        };
        let op = if req.directive == Directive::Extend {
            Operation::AllocExtend
        } else {
            Operation::AllocNew
        };
        let user_rule = req.attrs.inheritance();
        Asked {
            plan,
            from_application,
            attrs,
            op,
            user_rule,
            default_rule: false,
        }
    }

    /// The hand-off of [`Plan::hand_off_before_connecting`], for the cases
    /// only the connection tells (a tool identity found by discovery).
    fn hand_off_after_connecting(&self) -> Option<Detach> {
        let req = &self.plan.req;
        if self.from_application || req.directive != Directive::New {
            return None;
        }
        match self.plan.mode {
            PallocMode::NoWait => Some(Detach::Submit),
            PallocMode::Print if req.attrs.target.is_none() => Some(Detach::UntilGranted),
            _ => None,
        }
    }

    /// Settle what is sent: the rule (palloc asks for CHILD when the user
    /// names none, outside a job), whether this DVM can carry it, and a
    /// TARGET that names a live owner. Whether to send the inheritance.
    fn settle(&mut self, s: &Session) -> std::result::Result<bool, Failure> {
        // Outside a job, palloc's own namespace owns what it reserves and
        // ends with palloc, however palloc ends (kill -9 included): unless
        // the user names a rule, it asks for CHILD, so the nodes go back to
        // the scheduler once palloc and the jobs it started into the
        // allocation have ended, instead of staying unreserved (DEFAULT).
        let req = &mut self.plan.req;
        self.default_rule = self.user_rule.is_none()
            && !self.from_application
            && req.directive == Directive::New
            && req.attrs.target.is_none()
            && s.wire().supports(dt::ALLOC_INHERIT);
        if self.default_rule {
            req.attrs.inherit = Some(Inheritance::Child.into());
        }
        let send = self.inheritance_fits(s)?;
        self.check_target(s)?;
        Ok(send)
    }

    /// PMIX_ALLOC_INHERITANCE needs wire type 75, which a v41 server lacks:
    /// DEFAULT is then not sent (it is the behaviour anyway), any other
    /// rule is refused before anything is sent.
    fn inheritance_fits(&self, s: &Session) -> std::result::Result<bool, Failure> {
        let rule = self.plan.req.attrs.inheritance();
        if rule.is_none() || s.wire().supports(dt::ALLOC_INHERIT) {
            return Ok(rule.is_some());
        }
        if rule == Some(Inheritance::Default) {
            self.plan
                .ui
                .detail("--inherit default is this DVM's behaviour already; not sending it");
            return Ok(false);
        }
        Err(Failure::with(
            Exit::NotSupported,
            Some(Status::ERR_NOT_SUPPORTED),
            format!(
                "this DVM's PMIx ({}) cannot carry PMIX_ALLOC_INHERITANCE; --inherit needs a DVM \
with reservation support (nothing was sent)",
                s.wire().name()
            ),
        ))
    }

    /// A TARGET must name a live namespace (the owner), or the nodes would
    /// be stranded: refused before anything is reserved.
    fn check_target(&self, s: &Session) -> std::result::Result<(), Failure> {
        let req = &self.plan.req;
        let Some(t) = &req.attrs.target else {
            return Ok(());
        };
        if self.from_application
            || req.directive != Directive::New
            || crate::ops::alloc::target_is_live(s, t) != Some(false)
        {
            return Ok(());
        }
        Err(Failure::with(
            Exit::NotFound,
            Some(Status::ERR_NOT_FOUND),
            format!(
                "--target {t} names no live namespace of this DVM (the owning namespace must \
exist, spec §8.2.1.7); nothing was reserved. List the live ones with `pwatch --status --what namespaces`"
            ),
        ))
    }

    /// Warnings for this allocation, and the scheduler's reason while it
    /// is queued, go to the requester: listen before asking.
    fn listen_for_warnings(&self, s: &Session) {
        let mut codes = Vec::new();
        if self.plan.mode != PallocMode::NoWait {
            codes.push(crate::proto::status::PENDING_REASON);
            codes.extend(crate::app::source_outage::CODES);
            codes.push(crate::proto::status::REQUEST_LOST);
        }
        if matches!(self.plan.mode, PallocMode::Hold | PallocMode::Run(_)) {
            codes.extend([
                Status::ALLOC_TIMEOUT_WARNING,
                Status::EVENT_SESSION_END,
                crate::proto::status::NODES_LOST,
            ]);
        }
        if codes.is_empty() {
            return;
        }
        if let Err(e) = register(
            s,
            &codes,
            &[Info::new(keys::EVENT_HDLR_NAME, "palloc-timeout-warning")],
        ) {
            self.plan
                .ui
                .detail(&format!("cannot register for timeout warnings: {e}"));
        }
    }

    /// `--no-wait` inside a job: say the request id, report an immediate
    /// refusal or grant, and otherwise leave the request queued. No time
    /// window: a barrier sent behind the request tells when the DVM has
    /// handled it without answering (queued).
    fn report_submission(&self, s: &Session, tag: u32) -> Outcome {
        let ui = self.plan.ui;
        let req = &self.plan.req;
        ui.record(&RequestRecord {
            request_id: req.attrs.req_id.clone(),
            state: "accepted".into(),
        });
        if let Some(r) = &req.attrs.req_id {
            ui.result(r);
        }
        let barrier = crate::ops::query::begin_barrier(s).map_err(|e| Failure::lost(&e))?;
        let deadline = Instant::now() + s.timeout();
        loop {
            match step(s, None, None, Some(deadline)) {
                Step::Reply(t) if t == tag => match s.conn().take_reply(tag) {
                    Some(answer) => return self.submission_answered(s, answer),
                    None => continue,
                },
                // Handled and not answered: queued.
                Step::Reply(t) if t == barrier => return Ok(0),
                Step::Lost(e) => return Err(Failure::refused(self.op, &self.attrs, &e)),
                Step::Signal if signals::caught().is_some() => return Ok(0),
                _ if Instant::now() >= deadline => {
                    ui.detail("no answer from the DVM yet; the request stays queued");
                    return Ok(0);
                }
                _ => {}
            }
        }
    }

    /// The DVM answered a `--no-wait` request at once.
    fn submission_answered(&self, s: &Session, answer: crate::error::Result<Vec<u8>>) -> Outcome {
        let req = &self.plan.req;
        let refused = |e: &crate::error::Error| self.refused(s, e);
        let reply = answer
            .and_then(|bytes| decode_alloc_reply(s, req.directive, &bytes))
            .map_err(|e| refused(&e))?;
        let rec = granted_record(req, &reply, s, self.from_application);
        self.plan.ui.record(&rec);
        self.plan.ui.note(&allocation_line(&rec));
        Ok(0)
    }

    /// Wait for the answer (a queued request may wait for days), watching
    /// signals and, for a detached `--hold`, serving other shells that
    /// cancel it by its request id. A DVM that cannot honour the rule
    /// palloc chose by itself gets the request again without it.
    fn wait_for_answer(
        &mut self,
        s: &Session,
        tag: u32,
        infos: &[Info],
        submitter: &mut Option<Submitter>,
    ) -> std::result::Result<AllocReply, Failure> {
        let ui = self.plan.ui;
        // While a tool's request is queued (`--hold`, `-- CMD`, detached or
        // not), other shells of the user reach it by the request id
        // (`prelease --cancel ID`, `prelease ID`), as scancel reaches a
        // pending salloc: the cancel must come from the requester.
        // (Started once the DVM has the request: see `QueuedHolder`.)
        let mut queued_holder = QueuedHolder::new(if self.from_application {
            None
        } else {
            self.plan.req.attrs.req_id.clone()
        });
        let spinner = ui.queued(self.plan.req.attrs.req_id.as_deref());
        // A batch script waiting for its allocation is listed as queued.
        let listed = match (&self.plan.req.attrs.req_id, &self.plan.mode) {
            (Some(rid), PallocMode::Run(cmd)) => {
                super::batch::Queued::waiting(&s.conn().target().uri.nspace, rid, cmd)
            }
            _ => None,
        };
        let answered = self.await_grant(
            s,
            tag,
            infos,
            submitter,
            &mut queued_holder,
            spinner.as_ref(),
        );
        drop(queued_holder);
        if let Some(pb) = spinner {
            pb.finish_and_clear();
        }
        let granted = matches!(answered, Ok(Ok(_)));
        if let (false, Some(q)) = (granted, listed) {
            q.withdraw();
        }
        answered?.map_err(|e| self.refused(s, &e))
    }

    /// Await the answer to request `tag` (and, when the DVM cannot apply
    /// the default rule, to the request sent again without it). `infos`
    /// are what the request was sent with (sent again should a restarted
    /// scheduler say it lost the request).
    fn await_grant(
        &mut self,
        s: &Session,
        tag: u32,
        infos: &[Info],
        submitter: &mut Option<Submitter>,
        queued_holder: &mut QueuedHolder,
        spinner: Option<&crate::app::ui::Waiting>,
    ) -> std::result::Result<crate::error::Result<AllocReply>, Failure> {
        let ui = self.plan.ui;
        let mut reply = {
            let mut wait = Awaiting {
                holder: Some(&mut *queued_holder),
                submitter,
                spinner,
                infos,
            };
            await_answer(s, &self.plan.req, tag, &mut wait, ui)?
        };
        if self.default_rule && matches!(&reply, Err(e) if e.status == Status::ERR_NOT_SUPPORTED) {
            self.plan.req.attrs.inherit = None;
            let infos = request_infos(&self.plan.req, s.server_version(), false);
            let tag = begin_allocate(s, self.plan.req.directive, &infos)
                .map_err(|e| Failure::refused(self.op, &self.attrs, &e))?;
            let mut wait = Awaiting {
                holder: Some(&mut *queued_holder),
                submitter,
                spinner,
                infos: &infos,
            };
            reply = await_answer(s, &self.plan.req, tag, &mut wait, ui)?;
        }
        Ok(reply)
    }

    /// The refusal of the request, with the bad value named when the DVM
    /// answered `PMIX_ERR_BAD_PARAM` (from the request and the DVM's nodes).
    fn refused(&self, s: &Session, e: &crate::error::Error) -> Failure {
        let mut f = Failure::refused(self.op, &self.attrs, e);
        if e.status == Status::ERR_BAD_PARAM && e.kind == crate::error::ErrorKind::Refused {
            let said = e.said.is_some();
            if let Some(why) = super::bad_param::explain(s, &self.plan.req, said) {
                f.message.push_str(": ");
                f.message.push_str(&why);
            }
        }
        f
    }

    /// Say the grant (a holder says it once other shells can reach it, so
    /// that an id a script reads is usable at once), then print it, hold it
    /// or run the command in it, and end.
    fn use_grant(self, s: Session, reply: &AllocReply, submitter: Option<Submitter>) -> Outcome {
        let Asked { plan, .. } = &self;
        let (args, ui) = (plan.args, plan.ui);
        let mut rec = granted_record(&plan.req, reply, &s, self.from_application);
        // A job's own request (a script inside the DVM, such as spec 001's
        // probes) keeps an empty grant unless it runs a command in it.
        let uses_nodes = !self.from_application || matches!(plan.mode, PallocMode::Run(_));
        // One look at the DVM's view of the grant serves both checks.
        let alloc_id = rec.alloc_id.clone();
        let view = crate::app::grant_empty::GrantView::new(&s, &alloc_id);
        let checked = {
            let empty = uses_nodes
                .then(|| crate::app::grant_empty::refuse_empty_grant(&s, &plan.req, &rec, &view))
                .flatten();
            match empty {
                Some(f) => Err(f),
                None => crate::app::grant_ready::wait_usable(&s, &plan.req, &rec, &view),
            }
        };
        if let Err(f) = checked {
            finish(s);
            return Err(f);
        }
        // PRRTE master passes a scheduler's grant on without its nodes:
        // the DVM's list of the reservation names them once all are up
        // (a fresh look: the wait above may have seen fewer).
        if rec.nodes.is_empty() && uses_nodes {
            let now = crate::app::grant_empty::GrantView::new(&s, &alloc_id);
            rec.nodes = now.nodes().map(<[String]>::to_vec).unwrap_or_default();
        }
        if plan.req.directive == Directive::Extend {
            as_the_dvm_has_it(&s, &mut rec);
        }
        let announce = |rec: &AllocationRecord| self.announce(rec);
        if matches!(plan.mode, PallocMode::Print | PallocMode::NoWait) {
            announce(&rec);
        }
        // Unless the user chose a rule (which then decides, as the DVM
        // applies it when palloc's namespace ends), or --keep, a holder
        // that ends gives the allocation back itself.
        let give_back = self.user_rule.is_none();
        let code = match &plan.mode {
            PallocMode::Print | PallocMode::NoWait => Ok(0),
            PallocMode::Hold => hold(&s, &mut rec, give_back, submitter, ui, &announce),
            PallocMode::Run(cmd) => {
                let give_back = give_back && !args.keep;
                // A detached palloc (`--no-wait -- CMD`) tells the palloc
                // that started it of the grant once other shells can reach
                // it, before CMD runs (not when CMD ends).
                let told = |rec: &AllocationRecord| {
                    announce(rec);
                    if let Some(sub) = &submitter {
                        sub.tell(&format!(
                            "granted {}",
                            serde_json::to_string(rec).unwrap_or_default()
                        ));
                    }
                };
                run_command(&s, &mut rec, cmd, give_back, ui, &told)
            }
        };
        if !rec.on_owner_exit.is_empty() {
            ui.note(&rec.on_owner_exit);
        }
        let code = match code {
            Ok(c) => c,
            Err(f) => {
                finish(s);
                return Err(f);
            }
        };
        // A plain grant is one JSON document; --hold and -- CMD stream records.
        if !matches!(args.mode(), PallocMode::Print) || plan.opens_shell {
            ui.record(&ExitRecord {
                exit_code: code,
                alloc_id: Some(rec.alloc_id.clone()),
                on_owner_exit: Some(rec.on_owner_exit.clone()),
            });
        }
        finish(s);
        Ok(code)
    }

    /// stdout carries only what a script consumes (--parsable, --json,
    /// CMD's output); the grant line is a notice, on stderr as salloc's.
    fn announce(&self, rec: &AllocationRecord) {
        let ui = self.plan.ui;
        ui.record(rec);
        if self.plan.args.parsable {
            ui.result(&rec.alloc_id);
        } else {
            ui.note(&allocation_line(rec));
        }
        if let (true, PallocMode::Run(cmd)) = (self.plan.opens_shell, &self.plan.mode) {
            ui.note(&format!(
                "starting {} inside allocation {}; exit it to give the allocation back",
                cmd[0], rec.alloc_id
            ));
        }
    }
}
