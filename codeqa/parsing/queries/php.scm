; PHP: definitions, references and imports in the shared capture vocabulary.
; Namespaces are not definitions: qualified names leave them out.

(class_declaration
  name: (name) @name.definition.class) @definition.class

(interface_declaration
  name: (name) @name.definition.interface) @definition.interface

(trait_declaration
  name: (name) @name.definition.trait) @definition.trait

(enum_declaration
  name: (name) @name.definition.enum) @definition.enum

(function_definition
  name: (name) @name.definition.function) @definition.function

(method_declaration
  name: (name) @name.definition.method) @definition.method

(const_declaration
  (const_element
    (name) @name.definition.constant)) @definition.constant

; Calls: f(), $obj->m(), $this->m(), Foo::m(), self::m(), $obj?->m().
(function_call_expression
  function: [(name) (qualified_name (name) .)] @name.reference.call)

(member_call_expression
  object: (variable_name (name) @qualifier.reference.call)
  name: (name) @name.reference.call)

(member_call_expression
  object: (member_access_expression
    name: (name) @qualifier.reference.call)
  name: (name) @name.reference.call)

(member_call_expression
  object: (_)
  name: (name) @name.reference.call)

(nullsafe_member_call_expression
  name: (name) @name.reference.call)

(scoped_call_expression
  scope: [(name) (relative_scope) (qualified_name)] @qualifier.reference.call
  name: (name) @name.reference.call)

; Instantiations: new Foo(), new \Billing\Foo().
(object_creation_expression
  (name) @name.reference.new)

(object_creation_expression
  (qualified_name
    (name) @name.reference.new .))

; Type uses: parameters, properties, returns, extends/implements.
(named_type
  (name) @name.reference.type)

(named_type
  (qualified_name
    (name) @name.reference.type .))

(base_clause
  (name) @name.reference.type)

(class_interface_clause
  (name) @name.reference.type)

; Imports: use Billing\Mail\SmtpRelay; require 'x.php'.
(namespace_use_clause
  (qualified_name) @module.import)

(namespace_use_clause
  (qualified_name
    (name) @name.import .))

(require_once_expression
  (string
    (string_content) @module.import))

(require_expression
  (string
    (string_content) @module.import))

(include_expression
  (string
    (string_content) @module.import))

(include_once_expression
  (string
    (string_content) @module.import))
