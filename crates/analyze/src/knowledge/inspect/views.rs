//! Views and windows: View (its context unwrapped, its attach state, whether it is part of
//! a window's view hierarchy), Editor (its TextView), Dialog, ViewRootImpl, Window and
//! Toast; each inspector with the finder rule of the same class.

use super::kinds::Kind;
use super::vocab::{Checked, Inspectors, Inst, Report};

const VIEW: &str = "android.view.View";
const DECOR_VIEW: &str = "com.android.internal.policy.DecorView";

/// Parents climbed at most looking for a view's root: real hierarchies are tens deep, and
/// a dump could chain a million Views on one trace.
const MAX_DEPTH: usize = 256;

/// Whether a View's `mContext` is (or wraps) a destroyed Activity. A null `mContext`
/// (a mocked View) is no Activity, as LeakCanary HEAD reads it.
fn context_destroyed(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    match ins.req_inst_or_null(o, VIEW, "mContext")? {
        Some(c) => ins.wraps_destroyed_activity(&c),
        None => Ok(false),
    }
}

/// VIEW.
pub fn view(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    // Climb mParent while it is a View: the last View is the root view, the first parent
    // that is not a View (a ViewRootImpl) the root's parent.
    let mut root_parent = ins.req_inst_or_null(o, VIEW, "mParent")?;
    let mut root_view: Option<Inst> = None;
    let mut depth = 0;
    while let Some(p) = root_parent.filter(|p| p.kinds.is(Kind::View)) {
        if depth == MAX_DEPTH || root_view.is_some_and(|v| v.node == p.node) {
            root_parent = None;
            break;
        }
        depth += 1;
        root_view = Some(p);
        root_parent = ins.req_inst_or_null(&p, VIEW, "mParent")?;
    }
    let in_window = root_parent.is_some()
        || root_view.is_some_and(|v| ins.heap.class_name(v.class) == DECOR_VIEW);
    let attach_count = ins.req_int(o, VIEW, "mWindowAttachCount")?;
    let detached = ins.req_ref(o, VIEW, "mAttachInfo")? == 0;
    if context_destroyed(ins, o)? {
        r.yes("View.mContext references a destroyed activity".into());
    } else if in_window && attach_count > 0 {
        if detached {
            r.yes("View detached yet still part of window view hierarchy".into());
        } else {
            match root_view {
                Some(root) if ins.req_ref(&root, VIEW, "mAttachInfo")? == 0 => {
                    r.yes(format!(
                        "View attached but root view {} detached (attach disorder)",
                        ins.class_name(&root)
                    ));
                }
                _ => r.no("View attached".into()),
            }
        }
    }
    r.label(
        if in_window {
            "View is part of a window view hierarchy"
        } else {
            "View not part of a window view hierarchy"
        }
        .into(),
    );
    r.label(
        if detached {
            "View.mAttachInfo is null (view detached)"
        } else {
            "View.mAttachInfo is not null (view attached)"
        }
        .into(),
    );
    // The View's id by name, only where LeakCanary saved the app's names in the process
    // (never in a raw dump); an id not among them is `R.id.null`, as Shark writes it.
    if ins.resource_name(0).is_some() {
        let id = ins.req_int(o, VIEW, "mID")?;
        if id != -1 {
            let name = ins.resource_name(id).flatten();
            r.label(format!(
                "View.mID = R.id.{}",
                name.as_deref().unwrap_or("null")
            ));
        }
    }
    r.label(format!("View.mWindowAttachCount = {attach_count}"));
    Ok(())
}

/// VIEW's finder: a root view (no parent, or a parent that is not a View) whose context is
/// a destroyed Activity, or that was attached and is now detached while the child of a
/// ViewRootImpl or a DecorView.
pub fn view_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    let parent = ins.req_inst_or_null(o, VIEW, "mParent")?;
    let child_of_root_impl = parent.is_some_and(|p| !p.kinds.is(Kind::View));
    if !(parent.is_none() || child_of_root_impl) {
        return Ok(false);
    }
    if context_destroyed(ins, o)? {
        return Ok(true);
    }
    if ins.req_ref(o, VIEW, "mAttachInfo")? != 0 {
        return Ok(false);
    }
    if ins.req_int(o, VIEW, "mWindowAttachCount")? <= 0 {
        return Ok(false);
    }
    Ok(child_of_root_impl || ins.heap.class_name(o.class) == DECOR_VIEW)
}

/// EDITOR: VIEW's verdict on its TextView, each line prefixed `Editor#mTextView: `.
pub fn editor(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let Some(text_view) = text_view(ins, o) else {
        return Ok(());
    };
    if !text_view.kinds.is(Kind::View) {
        return Ok(());
    }
    let mut inner = Report::default();
    view(ins, &text_view, &mut inner)?;
    const P: &str = "Editor#mTextView:";
    for l in inner.labels {
        r.label(format!("{P} {l}"));
    }
    for l in inner.leaking {
        r.yes(format!("{P} {l}"));
    }
    for l in inner.not_leaking {
        r.no(format!("{P} {l}"));
    }
    Ok(())
}

fn text_view(ins: &Inspectors<'_>, o: &Inst) -> Option<Inst> {
    let id = ins
        .opt(o, "android.widget.Editor", "mTextView")?
        .as_object()?;
    ins.inst_id(id)
}

/// EDITOR's finder: its TextView passes VIEW's.
pub fn editor_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    match text_view(ins, o) {
        Some(t) if t.kinds.is(Kind::View) => view_leaking(ins, &t),
        _ => Ok(false),
    }
}

/// DIALOG: whether it has a decor view (null: never shown, or dismissed). No status: a
/// shown dialog may outlive its Activity.
pub fn dialog(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let decor = ins.req_ref(o, "android.app.Dialog", "mDecor")?;
    r.label(format!(
        "Dialog#mDecor is {}",
        if decor == 0 { "null" } else { "not null" }
    ));
    Ok(())
}

const ROOT_IMPL: &str = "android.view.ViewRootImpl";

/// Whether a ViewRootImpl's `mContext` (absent on old releases) is a destroyed Activity.
fn root_context_destroyed(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    if ins.opt(o, ROOT_IMPL, "mContext").is_none() {
        return Ok(false);
    }
    let context = ins.req_inst(o, ROOT_IMPL, "mContext")?;
    ins.wraps_destroyed_activity(&context)
}

/// VIEW_ROOT_IMPL.
pub fn view_root_impl(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    if ins.req_ref(o, ROOT_IMPL, "mView")? == 0 {
        r.yes("ViewRootImpl#mView is null".into());
    } else {
        if root_context_destroyed(ins, o)? {
            r.yes("ViewRootImpl.mContext references a destroyed activity, did you forget to cancel toasts or dismiss dialogs?".into());
        }
        r.label("ViewRootImpl#mView is not null".into());
    }
    const PARAMS: &str = "android.view.WindowManager$LayoutParams";
    let attributes = ins.req_inst(o, ROOT_IMPL, "mWindowAttributes")?;
    let title = ins.req_ref(&attributes, PARAMS, "mTitle")?;
    r.label(if title == 0 {
        "mWindowAttributes.mTitle is null".into()
    } else {
        // Shark requires a String here; another CharSequence is shown by its class.
        match ins.string(title, (PARAMS, "mTitle")) {
            Some(t) => format!("mWindowAttributes.mTitle = \"{t}\""),
            None => format!("mWindowAttributes.mTitle = {}", ins.heap.object_text(title)),
        }
    });
    let ty = ins.req_int(&attributes, PARAMS, "type")?;
    // WindowManager.LayoutParams.TYPE_TOAST.
    let toast = if ty == 2005 { " (Toast)" } else { "" };
    r.label(format!("mWindowAttributes.type = {ty}{toast}"));
    Ok(())
}

/// VIEW_ROOT_IMPL's finder: no view, or a destroyed Activity's context.
pub fn view_root_impl_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    if ins.req_ref(o, ROOT_IMPL, "mView")? == 0 {
        return Ok(true);
    }
    root_context_destroyed(ins, o)
}

/// WINDOW: destroyed is leaking; not destroyed is only a label (a dialog's window is never
/// destroyed, and may leak).
pub fn window(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    if window_leaking(ins, o)? {
        r.yes("Window#mDestroyed is true".into());
    } else {
        r.label("Window#mDestroyed is false".into());
    }
    Ok(())
}

pub fn window_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    ins.req_bool(o, "android.view.Window", "mDestroyed")
}

/// A Toast's `mTN.mWM` and `mTN.mView` are set.
fn toast_state(ins: &Inspectors<'_>, o: &Inst) -> Checked<(bool, bool)> {
    let tn = ins.req_inst(o, "android.widget.Toast", "mTN")?;
    const TN: &str = "android.widget.Toast$TN";
    Ok((
        ins.req_ref(&tn, TN, "mWM")? != 0,
        ins.req_ref(&tn, TN, "mView")? != 0,
    ))
}

/// TOAST: shown (`mWM` set) and hidden again (`mView` null) is leaking; still showing is
/// not; never shown says nothing.
pub fn toast(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    match toast_state(ins, o)? {
        (true, false) => r.yes(
            "This toast is done showing (Toast.mTN.mWM != null && Toast.mTN.mView == null)".into(),
        ),
        (true, true) => {
            r.no("This toast is showing (Toast.mTN.mWM != null && Toast.mTN.mView != null)".into())
        }
        _ => {}
    }
    Ok(())
}

pub fn toast_leaking(ins: &Inspectors<'_>, o: &Inst) -> Checked<bool> {
    Ok(toast_state(ins, o)? == (true, false))
}
