extension Array {
  /// The element at `index`, moved out of the array: `placeholder` (a
  /// case without payload) takes its place. Reading `self[index]` copies
  /// the element, a retain for each reference in it, and the array releases
  /// its own copy later; `reverse()` then `popLast()` copied each element
  /// through its value witnesses too (~500 instructions a writer job,
  /// callgrind). A swap moves the bytes and touches no count.
  mutating func moveOut(at index: Int, leaving placeholder: Element) -> Element {
    var taken = placeholder
    swap(&taken, &self[index])
    return taken
  }
}
