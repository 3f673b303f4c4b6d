//! How a followed reference is named in a trace: a field, an array element, a
//! collection's element or entry (with the key's text), a thread's local, and the
//! collection step LeakCanary's signature hashes.

use super::*;

/// The ids of `nodes` as the readers meet them: an id names a node when the index gives
/// that node for it (an id dumped twice names one of its records, as in the search).
fn targets(g: &Graph<'_, '_>, nodes: impl Iterator<Item = Node>) -> Map<u64, Node> {
    nodes
        .filter_map(|n| {
            let id = g.ix.id(n);
            (g.ix.node(id) == Some(n)).then_some((id, n))
        })
        .collect()
}

impl PathRefs {
    /// The reference from `from` to `to` as the search took it: the first one given to
    /// `to` among those of the priority `want` (`None`: any). Names unclipped.
    pub fn name(
        &self,
        g: &Graph<'_, '_>,
        ctx: &Ctx,
        from: Node,
        to: Node,
        want: Option<bool>,
    ) -> Option<(Reference, Option<u16>)> {
        let mut picked = self.picks(g, ctx, from, &[(to, want)]);
        Some(self.described(g, from, picked.remove(&to)?))
    }

    /// The reference the search took from `from` to each target of `wants` that it has
    /// (target → the priority its step wants, as [`PathRefs::name`]): one walk of a
    /// collection's entries names every step out of it that paths take, and it stops once
    /// those are known, as the search would take them.
    pub fn picks(
        &self,
        g: &Graph<'_, '_>,
        ctx: &Ctx,
        from: Node,
        wants: &[(Node, Option<bool>)],
    ) -> Map<Node, Emit> {
        let ids = targets(g, wants.iter().map(|&(to, _)| to));
        let mut only = Only::new(&ids, wants.iter().copied());
        self.each(g, from, &mut Scratch::default(), &mut { *ctx }, &mut only);
        self.count_reads(only.reads);
        only.picked().collect()
    }

    fn count_reads(&self, reads: u64) {
        self.step_reads
            .fetch_add(reads, std::sync::atomic::Ordering::Relaxed);
    }

    /// References the walks that name steps have read so far.
    pub fn step_reads(&self) -> u64 {
        self.step_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether naming a step out of `node` walks many references: a collection's entries,
    /// a thread's locals, an object array's elements (an instance's fields and a class's
    /// statics are few).
    pub fn wide(&self, g: &Graph<'_, '_>, node: Node) -> bool {
        match g.ix.tag(node) {
            tags::OBJECT_ARRAY_DUMP => true,
            tags::INSTANCE_DUMP => {
                self.threads.contains_key(&node)
                    || g.class_of(node)
                        .and_then(|c| self.classes.get(&c))
                        .is_some_and(|(_, r)| r.is_some())
            }
            _ => false,
        }
    }

    /// A reference out of `from`, named as a trace shows it, with its known-leak row.
    pub fn described(&self, g: &Graph<'_, '_>, from: Node, e: Emit) -> (Reference, Option<u16>) {
        (self.describe(g, from, e.via, e.library), e.library)
    }

    /// A reference as a trace shows it.
    fn describe(&self, g: &Graph<'_, '_>, from: Node, via: Via, library: Option<u16>) -> Reference {
        let class_of = |node: Node| g.node_class_name(node);
        let library_match = library.map(|e| self.table.get(e).pattern_text());
        let simple = |kind: &str, ty: &str, owner: String, name: String| Reference {
            kind: kind.into(),
            declared_by: Some(owner),
            reference_type: Some(ty.into()),
            name,
            library_match: library_match.clone(),
            ..Reference::default()
        };
        match via {
            Via::Field {
                name_id,
                declared_by,
            } => simple(
                "field",
                "INSTANCE_FIELD",
                g.class_name(declared_by).to_string(),
                g.field_name(declared_by, name_id),
            ),
            Via::Static { name_id } => {
                let class = g.class_of(from).unwrap_or(0);
                simple(
                    "static",
                    "STATIC_FIELD",
                    g.class_name(class).to_string(),
                    g.field_name(class, name_id),
                )
            }
            Via::Element(i) => Reference {
                kind: "array".into(),
                name: format!("[{i}]"),
                reference_type: Some("ARRAY_ENTRY".into()),
                owning_class: Some(class_of(from)),
                generic_name: Some("[x]".into()),
                library_match,
                ..Reference::default()
            },
            Via::Local => Reference {
                kind: "local".into(),
                name: "<Java Local>".into(),
                reference_type: Some("LOCAL".into()),
                owning_class: Some(class_of(from)),
                library_match,
                ..Reference::default()
            },
            Via::NewActivities => {
                let mut r = simple(
                    "field",
                    "INSTANCE_FIELD",
                    ACTIVITY_THREAD.into(),
                    "mNewActivities".into(),
                );
                r.collection = Some(android_step(ACTIVITY_THREAD, &["mNewActivities"]));
                r
            }
            Via::AnimatorTarget => {
                let mut r = simple(
                    "field",
                    "INSTANCE_FIELD",
                    OBJECT_ANIMATOR.into(),
                    "mTarget".into(),
                );
                r.collection = Some(android_step(OBJECT_ANIMATOR, &["mTarget", "referent"]));
                r
            }
            Via::Entry {
                tag,
                role,
                position,
                bucket,
                chain,
                key,
            } => {
                let owner = match tag {
                    Tag::MessageQueue => MESSAGE_QUEUE.to_string(),
                    Tag::NewActivities => CLIENT_RECORD.to_string(),
                    _ => class_of(from),
                };
                let name = entry_name(g, tag, role, position, key);
                let path = internal_path(tag, role, bucket, chain);
                entry_reference(owner, name, library_match, tag, position, path)
            }
        }
    }
}

/// The collection step of a reference to one of Android's own structures' fields.
fn android_step(class_name: &str, internal_path: &[&str]) -> CollectionStep {
    CollectionStep {
        class_name: class_name.into(),
        layout: "android".into(),
        position: 0,
        internal_path: internal_path.iter().map(|&f| f.into()).collect(),
    }
}

/// How a collection's entry is named in a trace: its position, its key, or `element()`
/// and `key()`.
fn entry_name(g: &Graph<'_, '_>, tag: Tag, role: Role, position: u32, key: u64) -> String {
    match (tag, role) {
        (Tag::HashSet { .. } | Tag::ArraySet, _) => "element()".to_string(),
        (_, Role::Key) => "key()".to_string(),
        (_, Role::Value) => key_text(g, key),
        (_, Role::Element) => position.to_string(),
    }
}

/// A reference to a collection's entry, with the collection step it stands for.
fn entry_reference(
    owner: String,
    name: String,
    library_match: Option<String>,
    tag: Tag,
    position: u32,
    internal_path: Vec<String>,
) -> Reference {
    Reference {
        kind: "array".into(),
        name: format!("[{name}]"),
        reference_type: Some("ARRAY_ENTRY".into()),
        owning_class: Some(owner.clone()),
        generic_name: Some("[x]".into()),
        library_match,
        collection: Some(CollectionStep {
            class_name: owner,
            layout: tag.layout().into(),
            position: position as u64,
            internal_path,
        }),
        ..Reference::default()
    }
}

/// The fields and indices a virtual step stands for, from the collection to the entry;
/// a run of one link is written once with its count (`next ×3`).
fn internal_path(tag: Tag, role: Role, bucket: u32, chain: u32) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let links = |out: &mut Vec<String>, name: &str, k: u32| match k {
        0 => {}
        1 => out.push(name.into()),
        k => out.push(format!("{name} ×{k}")),
    };
    let index = |i: u32| format!("[{i}]");
    let map_end = |role: Role, key: &str, value: &str| {
        if role == Role::Value {
            value.to_string()
        } else {
            key.to_string()
        }
    };
    match tag {
        Tag::ArrayList { harmony } => {
            out.push(if harmony { "array" } else { "elementData" }.into());
            out.push(index(chain));
        }
        Tag::CopyOnWriteArrayList { harmony } => {
            out.push(if harmony { "elements" } else { "array" }.into());
            out.push(index(chain));
        }
        Tag::ArraySet => {
            out.push("mArray".into());
            out.push(index(chain));
        }
        Tag::LinkedList { harmony } => {
            out.push(if harmony { "voidLink" } else { "first" }.into());
            links(&mut out, "next", chain);
            out.push(if harmony { "data" } else { "item" }.into());
        }
        Tag::HashMap | Tag::ConcurrentHashMap | Tag::HashSet { .. } | Tag::WeakHashMap { .. } => {
            match tag {
                Tag::HashSet { harmony } => {
                    out.push(if harmony { "backingMap" } else { "map" }.into());
                    out.push("table".into());
                }
                Tag::WeakHashMap { harmony: true } => out.push("elementData".into()),
                _ => out.push("table".into()),
            }
            out.push(index(bucket));
            links(&mut out, "next", chain);
            out.push(match tag {
                Tag::ConcurrentHashMap => map_end(role, "key", "val"),
                _ => map_end(role, "key", "value"),
            });
        }
        Tag::SafeIterableMap => {
            out.push("mStart".into());
            links(&mut out, "mNext", chain);
            out.push(map_end(role, "mKey", "mValue"));
        }
        Tag::MessageQueue => {
            out.push("mMessages".into());
            links(&mut out, "next", chain);
        }
        Tag::NewActivities => {
            links(&mut out, "nextIdle", chain);
            out.push("activity".into());
        }
    }
    out
}

/// How Shark names a map value by its key: a String key as `"text"`, another object as
/// `instance @ID of CLASS` (`class NAME`, `object array @ID of CLASS`, `primitive array
/// @ID of TYPE`), a null key as `null`. Ids are this analysis's (unsigned).
fn key_text(g: &Graph<'_, '_>, key: u64) -> String {
    if key == 0 {
        return "null".into();
    }
    let Some(node) = g.ix.node(key) else {
        return "null".into();
    };
    let class = g.node_class_name(node);
    match g.ix.tag(node) {
        tags::INSTANCE_DUMP if class == "java.lang.String" => match string_prefix(g, node) {
            Some(s) => format!("\"{s}\""),
            None => format!("instance @{key} of {class}"),
        },
        tags::INSTANCE_DUMP => format!("instance @{key} of {class}"),
        tags::CLASS_DUMP => format!("class {class}"),
        tags::OBJECT_ARRAY_DUMP => format!("object array @{key} of {class}"),
        _ => format!("primitive array @{key} of {class}"),
    }
}

/// The start of a String's text: enough to name it (a trace cuts names to
/// [`crate::base::limits::MAX_NAME_BYTES`]), however long the String.
fn string_prefix(g: &Graph<'_, '_>, node: Node) -> Option<String> {
    let fields = StringFields::from_named(&g.fields(node)?);
    let text = fields.head(g.ix, crate::base::limits::MAX_NAME_BYTES + 1)?;
    Some(text.0)
}

/// A thread object's name (`java.lang.Thread.name`).
pub fn thread_name(g: &Graph<'_, '_>, thread: Node) -> Option<String> {
    let name = g.field(thread, "name")?.as_object()?;
    g.string_value(name)
}
