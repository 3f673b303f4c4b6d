//! Jetpack Compose: the Recomposer by its state, a composition by whether it was disposed.

use hprof_shrink_core::hprof::Value;

use super::vocab::{Checked, Inspectors, Inst, Missing, Report};
use crate::base::limits::MAX_NAME_BYTES;

const RECOMPOSER: &str = "androidx.compose.runtime.Recomposer";
const COMPOSITION: &str = "androidx.compose.runtime.CompositionImpl";

/// The Recomposer's state's name (`Idle`, `ShutDown`, …), from its `_state` StateFlow.
fn recomposer_state(ins: &Inspectors<'_>, o: &Inst) -> Checked<Option<String>> {
    let flow = ins.req_inst(o, RECOMPOSER, "_state")?;
    let Some(state) = ins
        .opt(&flow, "kotlinx.coroutines.flow.StateFlowImpl", "_state")
        .and_then(|v| v.as_object())
        .and_then(|id| ins.inst_id(id))
    else {
        return Ok(None);
    };
    let name = ins.req_ref(&state, "java.lang.Enum", "name")?;
    ins.heap
        .string(name, MAX_NAME_BYTES)
        .map(Some)
        .ok_or(Missing::null("java.lang.Enum", "name"))
}

/// RECOMPOSER: shut down (or shutting down) is leaking; idle or with work pending is not;
/// inactive is a label.
pub fn recomposer(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let Some(state) = recomposer_state(ins, o)? else {
        return Ok(());
    };
    let text = format!("Recomposer is in state {state}");
    match state.as_str() {
        "ShutDown" | "ShuttingDown" => r.yes(text),
        "Inactive" | "InactivePendingWork" => r.label(text),
        "PendingWork" | "Idle" => r.no(text),
        _ => {}
    }
    Ok(())
}

/// The RECOMPOSER finder (ours: Shark has no Compose finder): shut down or shutting down.
pub fn recomposer_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(matches!(
        recomposer_state(ins, o)?.as_deref(),
        Some("ShutDown" | "ShuttingDown")
    ))
}

/// What a composition says of itself: `disposed` (older Compose), else `state` (3
/// disposed, 0 running, 1 deactivated, 2 inconsistent), as LeakCanary HEAD reads it.
enum Disposal {
    Disposed,
    Running(&'static str),
    Label(String),
}

fn disposal(ins: &Inspectors<'_>, o: &Inst) -> Checked<Disposal> {
    if let Some(v) = ins.opt(o, COMPOSITION, "disposed") {
        return match v {
            Value::Boolean(true) => Ok(Disposal::Disposed),
            Value::Boolean(false) => Ok(Disposal::Running("Composition not disposed")),
            _ => Err(Missing::field(COMPOSITION, "disposed")),
        };
    }
    if ins.opt(o, COMPOSITION, "state").is_some() {
        return Ok(match ins.req_int(o, COMPOSITION, "state")? {
            3 => Disposal::Disposed,
            0 => Disposal::Running("Composition running"),
            1 => Disposal::Label("Composition deactivated".into()),
            2 => Disposal::Label("Composition inconsistent".into()),
            n => Disposal::Label(format!("Composition state: {n}")),
        });
    }
    Ok(Disposal::Label(
        "Composition disposal state unknown (no disposed or state field)".into(),
    ))
}

/// COMPOSITION_IMPL.
pub fn composition(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    match disposal(ins, o)? {
        Disposal::Disposed => r.yes("Composition disposed".into()),
        Disposal::Running(why) => r.no(why.into()),
        Disposal::Label(l) => r.label(l),
    }
    Ok(())
}

/// The COMPOSITION_IMPL finder (ours): disposed.
pub fn composition_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(matches!(disposal(ins, o)?, Disposal::Disposed))
}
