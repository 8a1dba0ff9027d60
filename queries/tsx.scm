; TSX: JSX components are called by React (added to typescript.scm for .tsx files).

(jsx_opening_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))

(jsx_self_closing_element
  name: (identifier) @name.reference.call
  (#match? @name.reference.call "^[A-Z]"))
