fn main() {
    eprintln!("neocode: the command line is being built");
    std::process::exit(1);
}
