pub fn _x(){ let _ = git2::Repository::open("."); }
