//! The extension points a profile places plugins at, as upstream's framework names them.

/// An extension point a profile enables plugins at. PreFilter goes with Filter and PreScore
/// with Score: a plugin filters (or scores) with its pre-pass or not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Point {
    Filter,
    PostFilter,
    Score,
    Reserve,
    Permit,
    PreBind,
    Bind,
    PostBind,
}

impl Point {
    pub const ALL: [Point; 8] = [
        Point::Filter,
        Point::PostFilter,
        Point::Score,
        Point::Reserve,
        Point::Permit,
        Point::PreBind,
        Point::Bind,
        Point::PostBind,
    ];

    /// The point as a profile's `plugins` names it.
    pub fn key(self) -> &'static str {
        match self {
            Point::Filter => "filter",
            Point::PostFilter => "postFilter",
            Point::Score => "score",
            Point::Reserve => "reserve",
            Point::Permit => "permit",
            Point::PreBind => "preBind",
            Point::Bind => "bind",
            Point::PostBind => "postBind",
        }
    }
}
