fn main() {
    eprintln!("pwatch: not built yet");
    std::process::exit(1);
}
