//! Animators: an Animator's listeners, an ObjectAnimator's property and timing (labels
//! only).

use hprof_shrink_core::hprof::Value;

use super::vocab::{Checked, Inspectors, Inst, Missing, Report};
use crate::base::limits::{MAX_NAME_BYTES, MAX_STEP_LABELS};
use crate::base::shown::clipped;

/// ANIMATOR: `mListeners[i] = CLASS` for each listener of its ArrayList.
pub fn animator(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    let Some(list) = ins.req_inst_or_null(o, "android.animation.Animator", "mListeners")? else {
        r.label("mListeners = null".into());
        return Ok(());
    };
    let listeners = array_list(ins, &list);
    if listeners.is_empty() {
        r.label("mListeners is empty".into());
    }
    for (i, id) in listeners {
        let class = ins
            .heap
            .node(id)
            .map(|n| ins.heap.object_class_name(n))
            .unwrap_or_default();
        r.label(format!(
            "mListeners[{i}] = {}",
            clipped(&class, MAX_NAME_BYTES)
        ));
    }
    Ok(())
}

/// The non-null entries of a `java.util.ArrayList` (exactly that class; Android 7+'s
/// `elementData` or Android 6's `array`), with their indices; empty for anything else.
fn array_list(ins: &Inspectors<'_>, list: &Inst) -> Vec<(usize, u64)> {
    const LIST: &str = "java.util.ArrayList";
    if ins.heap.class_name(list.class) != LIST {
        return Vec::new();
    }
    let size = ins
        .opt(list, LIST, "size")
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let array = ins
        .opt(list, LIST, "elementData")
        .or_else(|| ins.opt(list, LIST, "array"))
        .and_then(|v| v.as_object())
        .and_then(|id| ins.heap.node(id))
        .and_then(|n| ins.heap.elements(n));
    let Some(array) = array else {
        return Vec::new();
    };
    array
        .take(size.max(0) as usize)
        .enumerate()
        .filter(|&(_, id)| id != 0)
        .take(MAX_STEP_LABELS)
        .collect()
}

/// OBJECT_ANIMATOR.
pub fn object_animator(ins: &Inspectors<'_>, o: &Inst, r: &mut Report) -> Checked {
    const OA: &str = "android.animation.ObjectAnimator";
    const VA: &str = "android.animation.ValueAnimator";
    const PROPERTY: &str = "android.util.Property";
    let text = |id: u64| {
        ins.heap
            .string(id, MAX_NAME_BYTES)
            .unwrap_or_else(|| "null".into())
    };
    let mut labels = vec![format!(
        "mPropertyName = {}",
        text(ins.req_ref(o, OA, "mPropertyName")?)
    )];
    match ins.req_inst_or_null(o, OA, "mProperty")? {
        None => labels.push("mProperty = null".into()),
        Some(p) => {
            labels.push(format!(
                "mProperty.mName = {}",
                text(ins.req_ref(&p, PROPERTY, "mName")?)
            ));
            let ty = ins.req_ref(&p, PROPERTY, "mType")?;
            let ty = ins
                .heap
                .node(ty)
                .filter(|&n| ins.heap.ix.tag(n) == hprof_shrink_core::hprof::tags::CLASS_DUMP)
                .map(|n| clipped(&ins.heap.object_class_name(n), MAX_NAME_BYTES))
                .unwrap_or_else(|| "null".into());
            labels.push(format!("mProperty.mType = {ty}"));
        }
    }
    for field in [
        "mInitialized",
        "mStarted",
        "mRunning",
        "mAnimationEndRequested",
    ] {
        labels.push(format!("{field} = {}", ins.req_bool(o, VA, field)?));
    }
    for field in ["mDuration", "mStartDelay"] {
        match ins.req(o, VA, field)? {
            Value::Long(v) => labels.push(format!("{field} = {v}")),
            _ => return Err(Missing::field(VA, field)),
        }
    }
    let repeat = ins.req_int(o, VA, "mRepeatCount")?;
    labels.push(if repeat == -1 {
        "mRepeatCount = INFINITE (-1)".into()
    } else {
        format!("mRepeatCount = {repeat}")
    });
    labels.push(match ins.req_int(o, VA, "mRepeatMode")? {
        1 => "mRepeatMode = RESTART (1)".into(),
        2 => "mRepeatMode = REVERSE (2)".into(),
        n => format!("mRepeatMode = Unknown ({n})"),
    });
    for l in labels {
        r.label(l);
    }
    Ok(())
}
