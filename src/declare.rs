//! The one way options are declared, read options ([`crate::ZarrOptions`]) and write options
//! ([`crate::write::WriteOptions`]) alike: `declare_options!` names each key once with its type,
//! default, parser, and the values and meaning the documentation shows. From it come the struct,
//! its `Default`, its `KEYS`, `set_declared`, `to_pairs` (what a cluster's executors receive:
//! a key cannot be forgotten there) and `documentation` (the options tables of the docs, checked
//! against them by tests). In the manner of DataFusion's `extensions_options!`, written here
//! because DataFusion's macro parses through `FromStr` with its own messages and knows nothing
//! of our storage options.

/// Declares an options struct (see the module documentation). An entry is
/// `field: Type = default, parse parser, values "…", meaning "…";`, or
/// `field as "key": …` where the key differs from the field's name; the parser is a
/// `fn(key: &str, value: &str) -> Result<Type>`, and `parse p, render r` gives the
/// `fn(&Type) -> Option<String>` that writes a value `p` reads back where [`OptionValue`]'s
/// text would not do.
macro_rules! declare_options {
    (
        $(#[$struct_meta:meta])*
        pub struct $name:ident {
            $(
                $(#[doc = $doc:literal])*
                $field:ident $(as $key:literal)?: $ty:ty = $default:expr,
                    parse $parse:path $(, render $render:path)?,
                    values $values:literal, meaning $meaning:literal;
            )*
        }
    ) => {
        $(#[$struct_meta])*
        pub struct $name {
            $( $(#[doc = $doc])* pub $field: $ty, )*
            /// Object store configuration (`aws.*`, `gcp.*`, `azure.*`, `http.*`, `retry.*`)
            /// for a remote location whose store the session has not registered.
            pub storage: StorageOptions,
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* storage: StorageOptions::default() }
            }
        }

        impl $name {
            /// The option keys, as documented (the storage options come besides).
            pub const KEYS: &'static [&'static str] =
                &[ $( $crate::declare::key_of!($field $($key)?), )* ];

            /// Each option's key, the values it takes and what it means, in declaration order:
            /// the options table of the documentation.
            pub fn documentation() -> Vec<OptionDoc> {
                vec![ $( OptionDoc {
                    key: $crate::declare::key_of!($field $($key)?),
                    values: $values,
                    meaning: $meaning,
                }, )* ]
            }

            /// Every option as the key/value pairs `from_pairs` reads back, storage options
            /// included (their values may be secrets: do not show them).
            pub fn to_pairs(&self) -> Vec<(String, String)> {
                let mut pairs = Vec::new();
                $(
                    let value = $crate::declare::render_with!(&self.$field $(, $render)?);
                    if let Some(value) = value {
                        pairs.push(($crate::declare::key_of!($field $($key)?).to_string(), value));
                    }
                )*
                for key in self.storage.keys() {
                    if let Some(value) = self.storage.get(key) {
                        pairs.push((key.to_string(), value.to_string()));
                    }
                }
                pairs
            }

            /// Sets one declared option; `false` when `key` is none of them.
            fn set_declared(&mut self, key: &str, value: &str) -> Result<bool> {
                match key {
                    $( $crate::declare::key_of!($field $($key)?) => {
                        self.$field = $parse(key, value)?
                    } )*
                    _ => return Ok(false),
                }
                Ok(true)
            }
        }
    };
}

/// An entry's value as text: by its own `render` function, or by [`OptionValue`].
macro_rules! render_with {
    ($value:expr) => {
        OptionValue::render($value)
    };
    ($value:expr, $render:path) => {
        $render($value)
    };
}

/// An entry's key: its own, or its field's name.
macro_rules! key_of {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $key:literal) => {
        $key
    };
}

pub(crate) use {declare_options, key_of, render_with};

/// One row of an options table: the key, the values it takes, what it means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionDoc {
    /// The key, as given in `OPTIONS`, `read_zarr`, `-o` or `-w`.
    pub key: &'static str,
    /// The values it takes, its default among them (Markdown).
    pub values: &'static str,
    /// What it does (Markdown).
    pub meaning: &'static str,
}

/// An options table in Markdown: one row per option.
pub(crate) fn markdown_rows(docs: &[OptionDoc]) -> String {
    let mut table = String::from("| option | values | meaning |\n|---|---|---|\n");
    for doc in docs {
        table.push_str(&format!(
            "| `{}` | {} | {} |\n",
            doc.key, doc.values, doc.meaning
        ));
    }
    table
}

/// An option's value as the key/value pair `to_pairs` writes (`None`: unset), read back by the
/// option's parser.
pub(crate) trait OptionValue {
    fn render(&self) -> Option<String>;
}

impl OptionValue for String {
    fn render(&self) -> Option<String> {
        Some(self.clone())
    }
}

impl OptionValue for bool {
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl OptionValue for u64 {
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl OptionValue for usize {
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl OptionValue for i32 {
    fn render(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl<T: OptionValue> OptionValue for Option<T> {
    fn render(&self) -> Option<String> {
        self.as_ref().and_then(OptionValue::render)
    }
}

impl<T: OptionValue> OptionValue for Vec<T> {
    /// Comma-separated; an empty list is unset.
    fn render(&self) -> Option<String> {
        let items: Option<Vec<String>> = self.iter().map(OptionValue::render).collect();
        items.filter(|items| !items.is_empty()).map(|i| i.join(","))
    }
}

impl OptionValue for serde_json::Map<String, serde_json::Value> {
    /// As JSON; an empty object is unset.
    fn render(&self) -> Option<String> {
        (!self.is_empty()).then(|| serde_json::Value::Object(self.clone()).to_string())
    }
}
