; Elixir: definitions are macro calls (defmodule, def, defp, defmacro, ...); their docs are
; `@moduledoc` / `@doc` attributes, captured as @doc with the definition they precede.
; Earlier patterns win on the same node, so the documented forms come first.

(call
  target: (identifier) @_defmodule
  (arguments
    (alias) @name.definition.namespace)
  (do_block
    .
    (unary_operator
      operand: (call
        target: (identifier) @_moduledoc
        (arguments
          (string) @doc))))
  (#match? @_defmodule "^(defmodule|defprotocol|defimpl)$")
  (#eq? @_moduledoc "moduledoc")) @definition.namespace

(call
  target: (identifier) @_defmodule
  (arguments
    (alias) @name.definition.namespace)
  (#match? @_defmodule "^(defmodule|defprotocol|defimpl)$")) @definition.namespace

; @doc "..." [@spec ...] def name(args) do ... end
((unary_operator
   operand: (call
     target: (identifier) @_doc
     (arguments
       (string) @doc)))
 .
 (unary_operator)*
 .
 (call
   target: (identifier) @_def
   (arguments
     [(call target: (identifier) @name.definition.function)
      (identifier) @name.definition.function
      (binary_operator
        left: (call target: (identifier) @name.definition.function))])) @definition.function
 (#eq? @_doc "doc")
 (#match? @_def "^(def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate)$"))

(call
  target: (identifier) @_def
  (arguments
    [(call target: (identifier) @name.definition.function)
     (identifier) @name.definition.function
     (binary_operator
       left: (call target: (identifier) @name.definition.function))])
  (#match? @_def "^(def|defp|defmacro|defmacrop|defguard|defguardp|defdelegate)$")) @definition.function

(call
  target: (identifier) @_defstruct
  (#eq? @_defstruct "defstruct")) @definition.struct @name.definition.struct

; Calls: f(x), Module.f(x), obj.field (a dot call without parentheses reads a field).
(call
  target: (identifier) @name.reference.call
  (#not-match? @name.reference.call "^(doc|moduledoc|typedoc|spec|type|typep|opaque|callback|impl|behaviour|def|defp|defmodule|defmacro|defmacrop|defguard|defguardp|defdelegate|defstruct|defprotocol|defimpl|defexception|alias|import|require|use|quote|unquote|if|unless|case|cond|with|for|fn|receive|try|raise)$"))

(call
  target: (dot
    left: (_) @qualifier.reference.call
    right: (identifier) @name.reference.call))

; Struct literals: %Invoice{...}
(struct
  (alias) @name.reference.new)

; Imports: alias/import/require/use Billing.SmtpRelay
(call
  target: (identifier) @_import
  (arguments
    .
    (alias) @module.import)
  (#match? @_import "^(alias|import|require|use)$"))
