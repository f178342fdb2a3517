//! TEMPORARY minimal status table; replaced by the codec work item's full table at merge.
#![allow(missing_docs)]
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize)]
pub struct Status(pub i32);
impl Status {
    pub const SUCCESS: Status = Status(0);
    pub const ERROR: Status = Status(-1);
    pub const ERR_INIT: Status = Status(-31);
    pub const ERR_TIMEOUT: Status = Status(-24);
    pub const ERR_UNREACH: Status = Status(-25);
    pub const ERR_LOST_CONNECTION: Status = Status(-61);
    pub const ERR_BAD_PARAM: Status = Status(-27);
    pub const ERR_NOT_FOUND: Status = Status(-46);
    pub const ERR_NOT_SUPPORTED: Status = Status(-47);
    pub const ERR_NO_PERMISSIONS: Status = Status(-23);
    pub const ERR_UNPACK_FAILURE: Status = Status(-20);
    pub const ERR_OUT_OF_RESOURCE: Status = Status(-29);
    pub fn name(self) -> &'static str {
        "PMIX_STATUS"
    }
    pub fn is_success(self) -> bool {
        self.0 == 0
    }
}
impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
