//! Fragments (the framework's, the support library's and androidx's) and androidx's
//! LifecycleRegistry.

use super::vocab::{Checked, Inspectors, Inst, Missing, Report};
use crate::base::limits::MAX_NAME_BYTES;

const FRAMEWORK: &str = "android.app.Fragment";
const SUPPORT: &str = "android.support.v4.app.Fragment";
const ANDROIDX: &str = "androidx.fragment.app.Fragment";
const REGISTRY: &str = "androidx.lifecycle.LifecycleRegistry";

/// The framework and support fragments: no FragmentManager is leaking (destroyed or
/// removed; also never added, as Shark reads it), one is not. `mTag` as a label.
fn managed(ins: &Inspectors<'_>, o: &Inst, class: &'static str, r: &mut Report) -> Checked {
    if ins.req_ref(o, class, "mFragmentManager")? == 0 {
        r.yes("Fragment#mFragmentManager is null".into());
    } else {
        r.no("Fragment#mFragmentManager is not null".into());
    }
    if let Some(tag) = ins.string_field(o, class, "mTag").filter(|t| !t.is_empty()) {
        r.label(format!("Fragment.mTag={tag}"));
    }
    Ok(())
}

/// FRAGMENT.
pub fn framework(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    managed(ins, o, FRAMEWORK, r)
}

/// SUPPORT_FRAGMENT.
pub fn support(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    managed(ins, o, SUPPORT, r)
}

/// The FRAGMENT and SUPPORT_FRAGMENT finders: no FragmentManager.
pub fn framework_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(ins.req_ref(o, FRAMEWORK, "mFragmentManager")? == 0)
}

pub fn support_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(ins.req_ref(o, SUPPORT, "mFragmentManager")? == 0)
}

/// A LifecycleRegistry's state: `DESTROYED`, `INITIALIZED`, `CREATED`, `STARTED` or
/// `RESUMED` (`state`, once `mState`: an enum, by its name).
pub fn registry_state(ins: &Inspectors<'_>, registry: &Inst) -> Checked<String> {
    let field = if ins.opt(registry, REGISTRY, "state").is_some() {
        "state"
    } else {
        "mState"
    };
    let state = ins.req_inst(registry, REGISTRY, field)?;
    let name = ins.req_ref(&state, "java.lang.Enum", "name")?;
    ins.heap
        .string(name, MAX_NAME_BYTES)
        .ok_or(Missing::null("java.lang.Enum", "name"))
}

/// Where an androidx Fragment is in its lifecycle.
enum Status {
    Destroyed(&'static str),
    Alive(String),
    Unknown(&'static str),
}

/// LeakCanary HEAD's reading of an androidx Fragment (`AndroidXFragmentLifecycle`): its
/// registry's state, and from androidx.fragment 1.1 (whose `Fragment#initState()` resets a
/// destroyed fragment's registry to INITIALIZED) the fields that reset leaves alone.
fn androidx_status(ins: &Inspectors<'_>, o: &Inst) -> Checked<Status> {
    let registry = ins
        .opt(o, ANDROIDX, "mLifecycleRegistry")
        .and_then(|v| v.as_object())
        .and_then(|id| ins.inst_id(id));
    let Some(registry) = registry else {
        return Ok(Status::Unknown("Fragment.mLifecycleRegistry = null"));
    };
    let state = registry_state(ins, &registry)?;
    if state == "DESTROYED" {
        return Ok(Status::Destroyed(
            "Fragment.mLifecycleRegistry.state is DESTROYED",
        ));
    }
    // androidx.fragment 1.1 added mMaxState in the release that made the reset.
    let one_one = ins.heap.has_field(o.class, ANDROIDX, "mMaxState");
    if state != "INITIALIZED" || !one_one {
        return Ok(Status::Alive(format!(
            "Fragment.mLifecycleRegistry.state is {state}"
        )));
    }
    if ins
        .opt(o, ANDROIDX, "mFragmentManager")
        .and_then(|v| v.as_object())
        .is_some_and(|id| id != 0)
    {
        return Ok(Status::Alive(
            "Fragment.mLifecycleRegistry.state is INITIALIZED and Fragment.mFragmentManager is set"
                .into(),
        ));
    }
    Ok(match ins.opt_bool(o, ANDROIDX, "mCalled") {
        None => Status::Unknown(
            "Fragment.mLifecycleRegistry.state is INITIALIZED and the Fragment.mCalled field could not be found",
        ),
        Some(true) => Status::Destroyed(
            "Fragment.mLifecycleRegistry.state was reset to INITIALIZED by Fragment#initState() after Fragment#onDestroy()",
        ),
        Some(false) => Status::Alive(
            "Fragment.mLifecycleRegistry.state is INITIALIZED and the fragment was never attached"
                .into(),
        ),
    })
}

/// ANDROIDX_FRAGMENT (LeakCanary HEAD's rule; Shark 2.14 takes INITIALIZED as alive).
pub fn androidx(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    // Shark requires the field (its value may be null).
    ins.req(o, ANDROIDX, "mLifecycleRegistry")?;
    match androidx_status(ins, o)? {
        Status::Destroyed(why) => r.yes(why.into()),
        Status::Alive(why) => r.no(why),
        Status::Unknown(label) => r.label(label.into()),
    }
    if let Some(tag) = ins
        .string_field(o, ANDROIDX, "mTag")
        .filter(|t| !t.is_empty())
    {
        r.label(format!("Fragment.mTag = {tag}"));
    }
    Ok(())
}

pub fn androidx_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    ins.req(o, ANDROIDX, "mLifecycleRegistry")?;
    Ok(matches!(androidx_status(ins, o)?, Status::Destroyed(_)))
}

/// LIFECYCLE_REGISTRY: any state but DESTROYED is not leaking; DESTROYED is a label (a
/// fragment's view registry is destroyed while the fragment rightly holds it).
pub fn lifecycle_registry(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let state = registry_state(ins, o)?;
    if state == "DESTROYED" {
        r.label(format!("state = {state}"));
    } else {
        r.no(format!("state is {state}"));
    }
    Ok(())
}
