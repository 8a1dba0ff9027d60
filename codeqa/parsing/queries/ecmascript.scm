; Shared by JavaScript and TypeScript (both grammars name these nodes alike): functions,
; methods (also assigned to members and exports), module constants, calls, instantiations and
; imports in the shared capture vocabulary.

(function_declaration
  name: (identifier) @name.definition.function) @definition.function

(generator_function_declaration
  name: (identifier) @name.definition.function) @definition.function

; Methods of an object literal bound to a name: const api = { get() {}, put: () => {} }.
(variable_declarator
  name: (identifier) @scope.definition.method
  value: (object
    (method_definition
      name: (_) @name.definition.method) @definition.method))

(variable_declarator
  name: (identifier) @scope.definition.method
  value: (object
    (pair
      key: (property_identifier) @name.definition.method
      value: [(arrow_function) (function_expression) (generator_function)]) @definition.method))

(method_definition
  name: (_) @name.definition.method) @definition.method

; Functions in other object literals: module.exports = { parse: function () {} }.
(pair
  key: (property_identifier) @name.definition.function
  value: [(arrow_function) (function_expression) (generator_function)]) @definition.function

; Functions assigned to exports are the module's own: exports.parse = () => {},
; module.exports.parse = function () {}.
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (identifier) @_exports
      property: (property_identifier) @name.definition.function)
    right: [(arrow_function) (function_expression) (generator_function)])
  (#eq? @_exports "exports")) @definition.function

(expression_statement
  (assignment_expression
    left: (member_expression
      object: (member_expression
        object: (identifier) @_module
        property: (property_identifier) @_exports)
      property: (property_identifier) @name.definition.function)
    right: [(arrow_function) (function_expression) (generator_function)])
  (#eq? @_module "module")
  (#eq? @_exports "exports")) @definition.function

; Functions assigned to members are methods of the object: Foo.prototype.bar = function () {}
; (owner Foo), proto.format = function () {} (owner proto), a.b.c = () => {} (owner a.b).
(expression_statement
  (assignment_expression
    left: (member_expression
      object: (member_expression
        object: (_) @scope.definition.method
        property: (property_identifier) @_prototype)
      property: (property_identifier) @name.definition.method)
    right: [(arrow_function) (function_expression) (generator_function)])
  (#eq? @_prototype "prototype")) @definition.method

(expression_statement
  (assignment_expression
    left: (member_expression
      object: (_) @scope.definition.method
      property: (property_identifier) @name.definition.method)
    right: [(arrow_function) (function_expression) (generator_function)])
  (#not-eq? @scope.definition.method "this")
  (#not-eq? @name.definition.method "exports")) @definition.method

; const f = () => {}, let g = function () {}
(lexical_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

(variable_declaration
  (variable_declarator
    name: (identifier) @name.definition.function
    value: [(arrow_function) (function_expression) (generator_function)])) @definition.function

; Module-level constants: UPPER_CASE `const`s, and every exported `const` that is not a
; function (functions match the patterns above first).
(program
  [(lexical_declaration
     (variable_declarator
       name: (identifier) @name.definition.constant))
   (variable_declaration
     (variable_declarator
       name: (identifier) @name.definition.constant))] @definition.constant
  (#match? @name.definition.constant "^[A-Z][A-Z0-9_$]*$"))

(program
  (export_statement
    declaration: (lexical_declaration
      "const"
      (variable_declarator
        name: (identifier) @name.definition.constant)) @definition.constant))

; Calls: f(), obj.m(), this.m(), Type.m(), this.#m() (a private method keeps its `#`, as its definition does).
(call_expression
  function: (identifier) @name.reference.call)

(call_expression
  function: (member_expression
    object: (_) @qualifier.reference.call
    property: [(property_identifier) (private_property_identifier)] @name.reference.call))

; Instantiations: new Foo(), new ns.Foo().
(new_expression
  constructor: (identifier) @name.reference.new)

(new_expression
  constructor: (member_expression
    object: (_) @qualifier.reference.new
    property: (property_identifier) @name.reference.new))

; Reads of values: a name written as the module constants are (UPPER_CASE), bare or as a
; member (`config.TIMEOUT`). Calls, instantiations and definitions win on the same node.
((identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z][A-Z0-9_$]*$"))

(member_expression
  object: (_) @qualifier.reference.read
  property: (property_identifier) @name.reference.read
  (#match? @name.reference.read "^[A-Z][A-Z0-9_$]*$"))

(variable_declarator name: (identifier) @name.written)

; Imports: import ... from './a', export ... from './a', require('./a').
(import_statement
  source: (string
    (string_fragment) @module.import))

(export_statement
  source: (string
    (string_fragment) @module.import))

(call_expression
  function: (identifier) @_require
  arguments: (arguments
    .
    (string
      (string_fragment) @module.import))
  (#eq? @_require "require"))

(import_clause
  (identifier) @name.import)

(import_specifier
  name: (identifier) @name.import)
