//! [`pmix_enum!`]: one declaration for a typed PMIx (or pmix-tools) enum and
//! its fixed words, so that the variants, their wire codes and their names
//! are written once, side by side.

/// Declares a `Copy` enum, its `ALL` list (in declaration order) and one
/// `fn(self) -> &'static str` per named string column.
///
/// With a representation (`enum Name: u8`) every variant carries its wire
/// code (`= 1`), and `code()` / `from_code()` are generated too.
///
/// (Exported for the crates above pmix-wire, which name it
/// `crate::proto::enums::pmix_enum!`; the example is shown, not compiled.)
///
/// ```text
/// pmix_enum! {
///     /// What the enum is.
///     #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
///     pub enum Colour: u8 {
///         /// The first.
///         Red = 1 => ["red", "PMIX_RED"],
///         /// The second.
///         Blue = 2 => ["blue", "PMIX_BLUE"],
///     }
///     strings {
///         /// The word.
///         word,
///         /// The header name.
///         pmix_name,
///     }
/// }
/// ```
#[macro_export]
#[doc(hidden)]
macro_rules! pmix_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $repr:ty {
            $($(#[$vmeta:meta])* $v:ident = $code:literal => [$($s:expr),* $(,)?]),* $(,)?
        }
        strings { $($cols:tt)* }
    ) => {
        $(#[$meta])*
        #[repr($repr)]
        $vis enum $name {
            $($(#[$vmeta])* $v = $code,)*
        }

        impl $name {
            /// The wire code.
            pub fn code(self) -> $repr {
                self as $repr
            }

            /// The variant for a wire code, if it is one of [`Self::ALL`].
            pub fn from_code(code: $repr) -> Option<Self> {
                Self::ALL.into_iter().find(|v| v.code() == code)
            }

            /// A code as received from a peer: the variant, or the code kept
            /// as outside the vocabulary (to be refused by name).
            pub fn received(code: $repr) -> $crate::proto::Received<Self, $repr> {
                Self::from_code(code).map_or(
                    $crate::proto::Received::Unknown(code),
                    $crate::proto::Received::Known,
                )
            }
        }

        $crate::proto::enums::pmix_enum!(@common $name { $($v => [$($s),*]),* } $($cols)*);
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $v:ident => [$($s:expr),* $(,)?]),* $(,)?
        }
        strings { $($cols:tt)* }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* $v,)*
        }

        $crate::proto::enums::pmix_enum!(@common $name { $($v => [$($s),*]),* } $($cols)*);
    };
    (@common $name:ident { $($v:ident => $strs:tt),* } $($cols:tt)*) => {
        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: [Self; [$(stringify!($v)),*].len()] = [$(Self::$v),*];
        }

        $crate::proto::enums::pmix_enum!(@strings $name { $($v => $strs),* } $($cols)*);
    };
    // One column at a time: the first string of every variant makes the
    // first column's function; the rest go round again.
    (@strings $name:ident
        { $($v:ident => [$first:expr $(, $more:expr)*]),* }
        $(#[$cmeta:meta])* $col:ident $(, $($rest:tt)*)?
    ) => {
        impl $name {
            $(#[$cmeta])*
            pub fn $col(self) -> &'static str {
                match self {
                    $(Self::$v => $first,)*
                }
            }
        }

        $crate::proto::enums::pmix_enum!(@strings $name { $($v => [$($more),*]),* } $($($rest)*)?);
    };
    (@strings $name:ident { $($v:ident => []),* }) => {};
}

pub use pmix_enum;

/// A value of the vocabulary as a peer sent it: one of the type's members,
/// or a code outside it. Decoding never fails on an unknown code; the layer
/// that decides (pdvm's model, psched) refuses it with its rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Received<T, R = u8> {
    /// A member of the vocabulary.
    Known(T),
    /// A code the vocabulary does not have.
    Unknown(R),
}

impl<T, R> Received<T, R> {
    /// The member, if the code was one.
    pub fn known(self) -> Option<T> {
        match self {
            Self::Known(t) => Some(t),
            Self::Unknown(_) => None,
        }
    }
}

/// The member's default (a request is NEW unless it says otherwise).
impl<T: Default, R> Default for Received<T, R> {
    fn default() -> Self {
        Self::Known(T::default())
    }
}

impl<T, R> From<T> for Received<T, R> {
    fn from(t: T) -> Self {
        Self::Known(t)
    }
}

#[cfg(test)]
// The macro's methods are `pub` for the real enums; these test enums are
// private.
#[allow(unreachable_pub)]
mod tests {
    pmix_enum! {
        /// A test enum with codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Coded: u8 {
            /// One.
            A = 3 => ["a", "PMIX_A"],
            /// Two.
            B = 7 => ["b", "PMIX_B"],
        }
        strings {
            /// The word.
            word,
            /// The name.
            pmix_name,
        }
    }

    pmix_enum! {
        /// A test enum without codes.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Plain {
            /// One.
            X => ["x"],
            /// Two.
            Y => ["y"],
        }
        strings {
            /// The word.
            word,
        }
    }

    #[test]
    fn columns_codes_and_all() {
        assert_eq!(Coded::ALL, [Coded::A, Coded::B]);
        assert_eq!(Coded::B.code(), 7);
        assert_eq!(Coded::from_code(3), Some(Coded::A));
        assert_eq!(Coded::from_code(4), None);
        assert_eq!(Coded::received(7), crate::proto::Received::Known(Coded::B));
        assert_eq!(Coded::received(4).known(), None);
        assert_eq!(Coded::A.word(), "a");
        assert_eq!(Coded::B.pmix_name(), "PMIX_B");
        assert_eq!(Plain::ALL, [Plain::X, Plain::Y]);
        assert_eq!(Plain::Y.word(), "y");
    }

    /// Every coded enum of the vocabulary: each variant's code names it, 0
    /// names none.
    #[test]
    fn vocabulary_codes_round_trip() {
        use crate::proto::{Directive, Inheritance};
        let directives =
            Directive::ALL.map(|d| (d.code(), Directive::from_code(d.code()) == Some(d)));
        let rules =
            Inheritance::ALL.map(|i| (i.code(), Inheritance::from_code(i.code()) == Some(i)));
        for (code, round_trips) in directives.iter().chain(&rules) {
            assert!(round_trips, "code {code}");
        }
        assert_eq!(Directive::from_code(0), None);
        assert_eq!(Inheritance::from_code(0), None);
    }
}
