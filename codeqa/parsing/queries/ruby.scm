; Ruby: definitions, references and imports in the shared capture vocabulary.
; A module is a definition (`Billing::InvoiceMailer#deliver` is Billing.InvoiceMailer.deliver).

(class
  name: [(constant) (scope_resolution)] @name.definition.class) @definition.class

(module
  name: [(constant) (scope_resolution)] @name.definition.namespace) @definition.namespace

(method
  name: (_) @name.definition.function) @definition.function

; def self.build: a method of the enclosing class.
(singleton_method
  name: (_) @name.definition.method) @definition.method

; Constants of a module or class: RETRY_LIMIT = 3.
(assignment
  left: (constant) @name.definition.constant) @definition.constant

; Calls: f(), obj.m, Foo.new, self.m (a bare `m` without arguments reads like a variable).
(call
  receiver: (_) @qualifier.reference.call
  method: (identifier) @name.reference.call)

(call
  !receiver
  method: (identifier) @name.reference.call
  arguments: (argument_list))

; Type uses: superclasses and mixins.
(superclass
  (constant) @name.reference.type)

(superclass
  (scope_resolution
    scope: (_) @qualifier.reference.type
    name: (constant) @name.reference.type))

(call
  !receiver
  method: (identifier) @_mixin
  arguments: (argument_list
    (constant) @name.reference.type)
  (#match? @_mixin "^(include|extend|prepend)$"))

; Imports: require "x", require_relative "x".
(call
  !receiver
  method: (identifier) @_require
  arguments: (argument_list
    .
    (string
      (string_content) @module.import))
  (#match? @_require "^(require|require_relative|load)$"))
