//! Square's libraries: Mortar's presenters and scopes, Coordinators.

use super::vocab::{Checked, Inspectors, Inst, Report};

/// MORTAR_PRESENTER: whether it has a view.
pub fn presenter(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let view = ins.req_ref(o, "mortar.Presenter", "view")?;
    r.label(format!(
        "Presenter#view is {}",
        if view == 0 { "null" } else { "not null" }
    ));
    Ok(())
}

/// MORTAR_SCOPE: a dead scope is leaking.
pub fn scope(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    const SCOPE: &str = "mortar.MortarScope";
    let dead = ins.req_bool(o, SCOPE, "dead")?;
    let name = ins.req_ref(o, SCOPE, "name")?;
    let name = ins
        .heap
        .string(name, crate::base::limits::MAX_NAME_BYTES)
        .unwrap_or_else(|| "null".into());
    if dead {
        r.yes(format!("mortar.MortarScope.dead is true for scope {name}"));
    } else {
        r.no(format!("mortar.MortarScope.dead is false for scope {name}"));
    }
    Ok(())
}

pub fn scope_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    ins.req_bool(o, "mortar.MortarScope", "dead")
}

/// COORDINATOR: whether it is attached.
pub fn coordinator(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let attached = ins.req_bool(o, "com.squareup.coordinators.Coordinator", "attached")?;
    r.label(format!("Coordinator#attached is {attached}"));
    Ok(())
}
